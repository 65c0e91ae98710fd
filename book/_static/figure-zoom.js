// A click on a figure opens it at its natural size over the page; a click or Escape closes it.
document.addEventListener("click", (event) => {
  const img = event.target;
  if (!(img instanceof HTMLImageElement) || !img.closest(".bd-article .cell_output")) return;
  const overlay = document.createElement("div");
  overlay.className = "cl-zoom";
  overlay.setAttribute("role", "dialog");
  overlay.setAttribute("aria-label", "Figure at full size (click or press Escape to close)");
  const big = img.cloneNode();
  big.removeAttribute("width");
  big.removeAttribute("style");
  overlay.append(big);
  const close = () => { overlay.remove(); document.removeEventListener("keydown", onKey); };
  const onKey = (e) => { if (e.key === "Escape") close(); };
  overlay.addEventListener("click", close);
  document.addEventListener("keydown", onKey);
  document.body.append(overlay);
});
