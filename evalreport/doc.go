// Package evalreport renders an eval's output folder (eval.json and the
// task run folders under it) as one self-contained HTML page: the pass
// rate per tag with its interval, each task's cost against its pass rate
// (an inline SVG chart), and the runs where the Critic and the hidden
// tests disagreed, each linked by a relative path to its run's trio view
// page.
//
// The page needs no network: the data is embedded as JSON, the CSS and
// script inline, and a Content-Security-Policy forbids every fetch. The
// package reads eval.json with only the fields it shows, so that an
// eval.json without the statistics (an older one) still renders: the
// intervals it lacks are computed here (Wilson's, 95 %). It writes the
// page and, for each disagreement, the run's view.html (package viewer),
// and nothing else.
package evalreport
