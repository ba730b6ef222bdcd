package views

import "slices"

// Assets are the stylesheets and deferred scripts a component needs, as
// paths under static/. Components never link their own: a page puts the
// assets of every component it shows in its <head> (Chrome.Use), each once.
// Lesson pages render their parts in separate renders (the skeleton and its
// holes), so nothing scoped to one render (templ.OnceHandle) could place
// them once; the web layer knows the page's components up front instead.
type Assets struct {
	Styles  []string
	Scripts []string
}

var (
	// ExperimentAssets serve the experiment widget (Experiment): uPlot and
	// the chart bands before experiment.js, which uses both.
	ExperimentAssets = Assets{
		Styles:  []string{"css/experiment.css", "vendor/uplot/uPlot.min.css", "css/capture.css"},
		Scripts: []string{"vendor/uplot/uPlot.iife.min.js", "js/chart-bands.js", "js/capture.js", "js/experiment.js"},
	}
	// TableAssets style tables like the widget's (exp-table) on pages
	// without a widget: the run history, the lab page.
	TableAssets = Assets{Styles: []string{"css/experiment.css"}}
	// PathDiagramAssets serve the TCP vs RDMA step-through (PathDiagram).
	PathDiagramAssets = Assets{Styles: []string{"css/visuals.css"}, Scripts: []string{"js/diagram.js"}}
	// CPUBudgetAssets serve the CPU budget calculator (CPUBudget).
	CPUBudgetAssets = Assets{Styles: []string{"css/visuals.css"}, Scripts: []string{"js/calculator.js"}}
	// WorthItAssets serve the "is RDMA worth it?" helper (WorthIt).
	WorthItAssets = Assets{Styles: []string{"css/visuals.css"}, Scripts: []string{"js/worthit.js"}}
	// TerminalAssets serve the learner's terminal (Terminal): xterm.js and
	// its fit addon before terminal.js.
	TerminalAssets = Assets{Styles: []string{"vendor/xterm/xterm.css", "css/terminal.css"},
		Scripts: []string{"vendor/xterm/xterm.min.js", "vendor/xterm/addon-fit.min.js", "js/terminal.js"}}
	// TaskAssets serve a lesson's :::task steps (Task).
	TaskAssets = Assets{Styles: []string{"css/task.css"}, Scripts: []string{"js/task.js"}}
	// ProgramAssets serve a lesson's :::program exercises (Program).
	// CodeMirror (vendored bundle) before program.js, which uses it.
	ProgramAssets = Assets{Styles: []string{"css/program.css"}, Scripts: []string{"vendor/codemirror/codemirror.min.js", "js/program.js"}}
	// QuizAssets serve questions (QuizQuestionView, QuizCheckpoint).
	QuizAssets = Assets{Styles: []string{"css/quiz.css"}, Scripts: []string{"js/quiz.js"}}
)

// Use adds the assets to the page's head, each path once, in first-use
// order (which keeps the cascade and script order of the components).
func (c *Chrome) Use(as ...Assets) {
	for _, a := range as {
		for _, p := range a.Styles {
			if !slices.Contains(c.Styles, p) {
				c.Styles = append(c.Styles, p)
			}
		}
		for _, p := range a.Scripts {
			if !slices.Contains(c.Scripts, p) {
				c.Scripts = append(c.Scripts, p)
			}
		}
	}
}
