// MathJax 3 for pymdownx.arithmatex in generic mode: arithmatex wraps inline maths in
// <span class="arithmatex">\( ... \)</span> and display maths in <div class="arithmatex">\[ ... \]</div>;
// MathJax typesets only those elements (pymdown-extensions' documented configuration).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  }
};
