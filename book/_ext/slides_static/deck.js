// deck.js -- starts a lecture deck (book/_ext/slides.py). Once MathJax has typeset, the fonts
// and images have loaded and the explorers have drawn, every slide's body is fitted into its
// 1280x720 box (CSS zoom on its content, never below DECK.minFit), then reveal.js starts.
// window.deckReport says what was shrunk and what still does not fit (tests/book/test_slides.py).
(function () {
  "use strict";
  const settings = window.DECK || { width: 1280, height: 720, minFit: 0.6 };
  const report = { slides: 0, shrunk: [], overflowing: [], errors: [] };
  window.addEventListener("error", (event) => report.errors.push(String(event.message)));

  function overflow(body) {
    return Math.max(body.scrollHeight / body.clientHeight, body.scrollWidth / body.clientWidth);
  }

  function fit(slide, index) {
    const body = slide.querySelector(".slide-body");
    const inner = body && body.querySelector(".fit");
    if (!inner) return;
    let zoom = 1;
    for (let step = 0; step < 8 && overflow(body) > 1.001 && zoom > settings.minFit; step++) {
      zoom = Math.max(settings.minFit, (zoom / overflow(body)) * 0.995);
      inner.style.zoom = zoom.toFixed(4);
    }
    slide.dataset.fit = zoom.toFixed(3);
    if (zoom < 1) report.shrunk.push({ index, zoom: Number(zoom.toFixed(3)) });
    if (overflow(body) > 1.001) report.overflowing.push(index);
  }

  async function loaded() {
    if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
    await document.fonts.ready;
    await Promise.all([...document.images].map((img) => img.complete ? null :
      new Promise((done) => { img.onload = img.onerror = done; })));
    // the explorers draw when their module runs; give them two frames
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  }

  async function start() {
    await loaded();
    const slides = [...document.querySelectorAll(".reveal .slide")];
    slides.forEach((slide, index) => fit(slide, index));
    report.slides = slides.length;
    document.querySelector(".reveal").classList.remove("measuring");
    await Reveal.initialize({
      width: settings.width, height: settings.height, margin: 0, minScale: 0.1, maxScale: 4,
      center: false, hash: true, transition: "none", backgroundTransition: "none",
      slideNumber: "c/t", controls: true, progress: true, viewDistance: 3,
    });
    window.deckReport = report;
  }

  start().catch((error) => { report.errors.push(String(error)); window.deckReport = report; });
})();
