package main

import (
	"time"

	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/proc"
)

// The admin side's /stats document.

// Stats is the admin /stats document of a loop server.
type Stats struct {
	Server         string        `json:"server"`
	Engine         string        `json:"engine"`
	LoopsWanted    int           `json:"loops_configured"`
	BlockNs        int64         `json:"block_ns"`
	BlockMode      string        `json:"block_mode"`
	DBConns        int           `json:"db_conns,omitempty"` // --block-mode postgres: the database pool's connections
	BlockWarnNs    int64         `json:"block_warn_ns"`
	LagIntervalNs  int64         `json:"lag_interval_ns"`
	Detection      lag.Detection `json:"block_detection"`
	OffloadWorkers int           `json:"offload_workers"`
	OffloadQueued  int           `json:"offload_queued"`
	MaxConns       int64         `json:"max_connections"`
	Refused        int64         `json:"connections_refused"`
	// BeatsRepeated counts heartbeat wakes repeated because the beat was
	// still waiting at its loop's next turn (evio, which loses wakes).
	BeatsRepeated int64       `json:"beats_repeated"`
	TimedOut      TimedOut    `json:"timed_out"`
	UptimeNs      int64       `json:"uptime_ns"`
	Process       proc.Usage  `json:"process"`
	Loops         []LoopStats `json:"loops"`
}

// TimedOut counts the connections closed by each timeout.
type TimedOut struct {
	Idle   int64 `json:"idle"`
	Header int64 `json:"header"`
	Body   int64 `json:"body"`
}

// LoopStats is one loop's line in Stats.
type LoopStats struct {
	Loop             int   `json:"loop"`
	ConnectionsOpen  int64 `json:"connections_open"`
	ConnectionsTotal int64 `json:"connections_total"`
	Requests         int64 `json:"requests"`
	BusyNs           int64 `json:"busy_ns"`
	LongestBlockNs   int64 `json:"longest_block_ns"`
	// The loop's own lag (heartbeat) and the blocks the detector saw.
	lag.Stats
}

func (s *server) stats() Stats {
	now := time.Now().UnixNano()
	st := Stats{
		Server:         "loopserver",
		Engine:         s.opts.engine,
		LoopsWanted:    s.opts.loops,
		BlockNs:        int64(s.opts.Block),
		BlockMode:      s.opts.BlockMode.String(),
		DBConns:        s.opts.DBConns(),
		BlockWarnNs:    int64(s.opts.blockWarn),
		LagIntervalNs:  int64(s.opts.lagInterval),
		Detection:      s.mon.Detection(),
		OffloadWorkers: s.pool.Workers(),
		OffloadQueued:  s.pool.Queued(),
		MaxConns:       s.maxConns,
		Refused:        s.refused.Load(),
		BeatsRepeated:  s.mon.Repeated(),
		TimedOut:       TimedOut{Idle: s.idleTO.Load(), Header: s.headerTO.Load(), Body: s.bodyTO.Load()},
		UptimeNs:       int64(time.Since(s.started)),
		Process:        proc.Self(),
		Loops:          []LoopStats{},
	}
	for _, l := range s.loops.all() {
		st.Loops = append(st.Loops, LoopStats{
			Loop:             l.index,
			ConnectionsOpen:  l.connsOpen.Load(),
			ConnectionsTotal: l.connsTotal.Load(),
			Requests:         l.requests.Load(),
			BusyNs:           l.busyNs.Load(),
			LongestBlockNs:   l.longestNs.Load(),
			Stats:            l.lag.Stats(now),
		})
	}
	return st
}
