//go:build !linux

package loopwatch

import "time"

func gettid() int { return 0 } // no thread counts to read: causes stay Unknown

type threadSample struct {
	ran, delay time.Duration
	runnable   bool
	inCall     bool
}

type threadFiles struct{}

func openThread(int) *threadFiles { return nil }

func (*threadFiles) close() {}

func (l *Loop) sample() (threadSample, bool) { return threadSample{}, false }
