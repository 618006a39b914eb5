// Package doccheck keeps the docs true to the data they quote.
//
// Two committed runs are the docs' data: docs/run, the default run with
// Netty and Tomcat beside the kit's servers, and docs/talk-run, a stage run.
// A figure a page quotes from one of them is marked right after it with an
// HTML comment, invisible once rendered:
//
//	the loops made **766 req/s**<!-- run: headline.servers[name=loop-gnet].throughput -->
//
// "run:" reads docs/run/findings.json, "talk-run:" docs/talk-run/findings.json,
// "shop-run:" docs/shop-run/findings.json (a service measured as it is).
// The path is dot-separated keys, a list element chosen by [key=value] (the
// first match) or [N]. The text before the marker (markdown emphasis
// skipped) must end with the value: a string as it is, a number as the docs
// write it: a whole number with thousands commas ("17,189"), or with
// "| int" a float rounded so, "| 1" or "| 2" with that many decimals.
// A figure that is not the run's says what it is instead:
// <!-- not run: published -->, <!-- not run: arithmetic -->,
// <!-- not run: see measurements.md#anchor -->.
//
// Figures checks the markers of a page against the runs' findings;
// Unmarked names the throughputs ("N req/s") and factors ("N.Nx") a page
// quotes with no marker after them; Walkthroughs gives the shell blocks a
// page marks as a walk-through, which the tests run with bash as written.
// CheckShot says whether a screenshot names its run (PNG text chunks
// written by internal/cmd/screenshots) and was made after that run ended.
package doccheck
