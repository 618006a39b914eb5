//go:build race

package main

// raceOn: the race detector is on, and Go code runs several times slower.
const raceOn = true
