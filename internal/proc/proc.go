// Package proc reads what the operating system counts for this process: CPU
// time and context switches, so that every program can report its own cost.
package proc

import (
	"syscall"
	"time"
)

// Usage is the process's resource use since it started.
type Usage struct {
	UserNs      int64 `json:"user_ns"`
	SystemNs    int64 `json:"system_ns"`
	VolCtxSw    int64 `json:"voluntary_ctx_switches"`
	InvolCtxSw  int64 `json:"involuntary_ctx_switches"`
	MaxRSSBytes int64 `json:"max_rss_bytes"`
}

// CPUNs is user plus system CPU time in nanoseconds.
func (u Usage) CPUNs() int64 { return u.UserNs + u.SystemNs }

// Self reads the calling process's usage (all its threads).
func Self() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	return Usage{
		UserNs:      time.Duration(ru.Utime.Nano()).Nanoseconds(),
		SystemNs:    time.Duration(ru.Stime.Nano()).Nanoseconds(),
		VolCtxSw:    int64(ru.Nvcsw),
		InvolCtxSw:  int64(ru.Nivcsw),
		MaxRSSBytes: int64(ru.Maxrss) * 1024,
	}
}
