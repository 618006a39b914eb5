package main

import "runtime"

func goroutines() int { return runtime.NumGoroutine() }
