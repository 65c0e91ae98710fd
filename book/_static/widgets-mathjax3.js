/* The Jupyter widgets HTML manager typesets widget labels with the MathJax 2 call
   MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]); this book ships MathJax 3, which has
   no Hub. Provide that one call on top of MathJax 3's typesetPromise. Installed once the
   deferred MathJax script has run (before the widget manager renders on "load"). */
(function () {
  function install() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) { return; }
    mj.Hub = {
      Queue: function (command) {
        var element = command && command[2];
        var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
        ready.then(function () {
          if (mj.typesetPromise) { return mj.typesetPromise(element ? [element] : undefined); }
        }).catch(function (err) { console.warn("MathJax typesetting of a widget failed", err); });
      }
    };
  }
  document.addEventListener("DOMContentLoaded", install);
  window.addEventListener("load", install);
})();
