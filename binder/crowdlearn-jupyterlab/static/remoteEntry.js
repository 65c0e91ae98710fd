// crowdlearn-jupyterlab: a JupyterLab 4 extension written by hand, without a build step.
//
// JupyterLab loads a prebuilt ("federated") extension by running this script, which registers
// a module-federation container as window._JUPYTERLAB[name]; it then calls the container's
// init(shareScope) and get("./extension"). The shared scope holds JupyterLab's own
// @jupyterlab/notebook, whose token and signals the plugin below uses.
//
// What it does, in a jupytext MyST notebook (a book chapter or an assignment) only:
// * a code cell whose output is folded (jupyter.outputs_hidden, as the chapters set for the
//   cells the web page hides) stays folded when it runs: JupyterLab unfolds the output of every
//   cell it executes, so after Run All the file saved would have lost outputs_hidden;
// * the code cells of an exercise's solution (between the markdown cells holding
//   {solution-start} and {solution-end}) unfold when the reader opens the solution's box and
//   fold again when it is closed, so the solution's prose, code and output fold together.
(function () {
  "use strict";
  const NAME = "crowdlearn-jupyterlab";
  const SOLUTION_START = /^[`:]{3,}\{solution-start\}/m;
  const SOLUTION_END = /^[`:]{3,}\{solution-end\}/m;
  // jupyterlab-myst titles a solution's box "Start of Solution to Exercise k" (a gated
  // solution) or "Solution to Exercise k"; a cell may also hold self-check or erratum boxes
  const SOLUTION_TITLE = /\bSolution to\b/;
  let shareScope = null;

  async function shared(name) {
    const versions = shareScope && shareScope[name];
    if (!versions) throw new Error(`${NAME}: ${name} is not shared by JupyterLab`);
    const entry = Object.values(versions).find((v) => v.loaded) || Object.values(versions)[0];
    return (await entry.get())();
  }

  function isMystNotebook(notebook) {
    const model = notebook && notebook.model;
    const jupytext = model && model.getMetadata ? model.getMetadata("jupytext") : null;
    const text = jupytext && jupytext.text_representation;
    return !!text && text.format_name === "myst";
  }

  function source(cell) {
    return cell.model.sharedModel.getSource();
  }

  // Fold or unfold the code cells of the solution whose prose is in cell `index`.
  function foldSolution(notebook, index, folded) {
    const cells = notebook.widgets;
    for (let i = index + 1; i < cells.length; i++) {
      const cell = cells[i];
      if (cell.model.type === "markdown" && SOLUTION_END.test(source(cell))) break;
      if (cell.model.type === "code") {
        if (cell.inputHidden !== folded) cell.inputHidden = folded;
        if (cell.outputHidden !== folded) cell.outputHidden = folded;
      }
    }
  }

  function watchSolutions(panel) {
    const notebook = panel.content;
    // "toggle" does not bubble: listen in the capture phase, above every cell
    notebook.node.addEventListener("toggle", (event) => {
      const box = event.target;
      if (!(box instanceof HTMLDetailsElement) || !isMystNotebook(notebook)) return;
      const index = notebook.widgets.findIndex((c) => c.node.contains(box));
      const cell = notebook.widgets[index];
      if (!cell || cell.model.type !== "markdown" || !SOLUTION_START.test(source(cell))) return;
      // the solution's own box: the cell's last box titled as a solution
      const boxes = [...cell.node.querySelectorAll("details")].filter((d) => {
        const summary = d.querySelector(":scope > summary");
        return summary && SOLUTION_TITLE.test(summary.textContent);
      });
      if (boxes[boxes.length - 1] !== box) return;
      foldSolution(notebook, index, !box.open);
    }, true);
  }

  async function makePlugin() {
    const nb = await shared("@jupyterlab/notebook");
    return {
      id: `${NAME}:book-cells`,
      description: "Folded cells stay folded when run; solutions fold with their code.",
      autoStart: true,
      requires: [nb.INotebookTracker],
      activate: (app, tracker) => {
        // NotebookActions emits executionScheduled just before CodeCell.execute, whose
        // synchronous part sets outputHidden = false: fold it again right after that
        nb.NotebookActions.executionScheduled.connect((_, { notebook, cell }) => {
          if (!cell.outputHidden || !isMystNotebook(notebook)) return;
          queueMicrotask(() => {
            if (!cell.isDisposed) cell.outputHidden = true;
          });
        });
        tracker.forEach(watchSolutions);
        tracker.widgetAdded.connect((_, panel) => watchSolutions(panel));
      },
    };
  }

  const root = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  root[NAME] = {
    init: (scope) => {
      shareScope = scope;
    },
    get: async (module) => {
      if (module !== "./extension") throw new Error(`${NAME}: no module ${module}`);
      const plugin = await makePlugin();
      return () => ({ __esModule: true, default: plugin });
    },
  };
})();
