// _widget.js -- one explorer, as an anywidget front-end and as a block of the rendered page.
//
// Each view (explorer_view.js, annotators_view.js, em_steps_view.js, vote_view.js) ends with
// `export default explorer(mountX)`. In Jupyter, anywidget calls `render`: the view is drawn
// from the widget's `view_settings` (redrawn whenever the kernel changes them), and every
// redraw's payload is sent back to the kernel as the widget's `result`. In the rendered
// book, the text/html twin (crowdlearn.widgets._explorer.live_html) inlines the view's
// bundle and calls `mount(element, settings)`: the same drawing, with no kernel.

/** The anywidget module of the view drawn by `mount(el, settings, onUpdate)`. */
export function explorer(mount) {
  return {
    mount,
    render({ model, el }) {
      let root = document.createElement("div");
      el.append(root);
      const send = (payload) => { model.set("result", payload); model.save_changes(); };
      // each drawing gets a fresh element, so no listener of the previous one survives
      const draw = () => {
        const fresh = document.createElement("div");
        root.replaceWith(fresh);
        root = fresh;
        mount(root, model.get("view_settings"), send);
      };
      model.on("change:view_settings", draw);
      draw();
      return () => model.off("change:view_settings", draw);
    },
  };
}
