// Package standalone holds the test that the kit's public modules stand
// alone: a stranger's module that requires loopwatch gets loopwatch and
// nothing else of the kit's (standalone_test.go).
package standalone
