// Package console is what a run shows a person on a terminal: whether an
// output is a terminal (and may be coloured), the live agent tree drawn
// while a run goes (or one line per event elsewhere), the questions put to
// the person at the terminal, and the end-of-run report: the answer, the
// totals, the spending summary, the metrics, the changes and what the run
// refused from the wire.
package console
