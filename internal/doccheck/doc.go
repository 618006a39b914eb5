// Package doccheck checks the docs against the data they quote: the
// figures against the committed runs (docs/run, docs/talk-run), and the
// screenshots against the runs they say they show. Its tests are the
// check; it has no program.
package doccheck
