package watch

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/services"
)

// costLoad is each service's load in the cost benchmark: connections on
// its blocking route.
var costLoad = map[services.Kind]int{services.Netty: 8, services.Tomcat: 8, services.Gnet: 8, services.Node: 2}

// costRun is one window of load: the blocking route's answers a second,
// and the bystander's median (GET /health every 20 ms on a connection of
// its own).
type costRun struct {
	rate   float64
	median time.Duration
}

// measureLoad loads s's blocking route from n connections, with a
// bystander beside it, and measures both over window, with watch (if any)
// started at the window's start; the watch's reading after its own window
// is waited for, not measured.
func measureLoad(b *testing.B, s *services.Service, n int, window time.Duration, watch func()) costRun {
	answered, stop := load(b, s, s.Blocking, n)
	defer stop()
	time.Sleep(300 * time.Millisecond) // connections made
	watched := make(chan struct{})
	if watch != nil {
		go func() { defer close(watched); watch() }()
	} else {
		close(watched)
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	began, from := time.Now(), answered()
	var waits []time.Duration
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	for tick := time.NewTicker(20 * time.Millisecond); ctx.Err() == nil; <-tick.C {
		sent := time.Now()
		resp, err := c.Do(s.Fast.HTTP(s.URL()).WithContext(ctx))
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		waits = append(waits, time.Since(sent))
	}
	r := costRun{rate: float64(answered()-from) / time.Since(began).Seconds()}
	<-watched
	slices.Sort(waits)
	if len(waits) > 0 {
		r.median = waits[len(waits)/2]
	}
	return r
}

// BenchmarkWatchCost: what watching costs each service of
// examples/services (docs/measurements.md): its blocking route loaded and
// measured for 4 s unwatched, then 4 s with a 3 s watch started at its
// start (Flight Recorder's start and stop, the trace's fetch, the looks:
// the reading after the watch is not measured), alternately, after a first
// window that warms it; the answers a second and the bystander's median
// (GET /health every 20 ms on a connection of its own), each way.
//
//	go test ./internal/watch -run '^$' -bench WatchCost -benchtime 3x
func BenchmarkWatchCost(b *testing.B) {
	for _, k := range services.Kinds {
		b.Run(string(k), func(b *testing.B) {
			s := services.Start(b, k, services.Options{})
			const window = 4 * time.Second
			measureLoad(b, s, costLoad[k], window, nil) // warm
			var plain, watched []costRun
			for range b.N {
				plain = append(plain, measureLoad(b, s, costLoad[k], window, nil))
				watched = append(watched, measureLoad(b, s, costLoad[k], window, func() {
					w := Watch(context.Background(), Target{PID: s.PID, Pprof: s.PProf}, Options{Window: 3 * time.Second})
					b.Logf("%s: %s (kit's CPU %s)", k, w.Words(), time.Duration(w.CostNs))
				}))
			}
			med := func(rs []costRun) costRun {
				rates, meds := []float64{}, []time.Duration{}
				for _, r := range rs {
					rates, meds = append(rates, r.rate), append(meds, r.median)
				}
				slices.Sort(rates)
				slices.Sort(meds)
				return costRun{rate: rates[len(rates)/2], median: meds[len(meds)/2]}
			}
			p, w := med(plain), med(watched)
			b.ReportMetric(p.rate, "unwatched-req/s")
			b.ReportMetric(w.rate, "watched-req/s")
			b.ReportMetric(float64(p.median)/1e6, "unwatched-bystander-ms")
			b.ReportMetric(float64(w.median)/1e6, "watched-bystander-ms")
			b.Logf("%s: unwatched %v, watched %v", k, plain, watched)
		})
	}
}

// BenchmarkDigestCache: what compiling the digest once saves a watched
// JVM step (docs/measurements.md): the Netty shop loaded on its blocking
// route from 4 connections, watched for 2 s by pairs, its digest compiled
// at the watch by java's source launcher (the kit's cache unwritable: as
// every watch did before the cache) then run from the cached jar; each
// way, the watch's time past its window (JFR.stop and the digest) and the
// kit's CPU a watch, medians.
//
//	go test ./internal/watch -run '^$' -bench DigestCache -benchtime 6x
func BenchmarkDigestCache(b *testing.B) {
	s := services.Start(b, services.Netty, services.Options{})
	unwritable := filepath.Join(b.TempDir(), "a-file")
	if err := os.WriteFile(unwritable, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	cache := b.TempDir()
	watch := func(dir string) (past, cpu time.Duration) {
		b.Setenv("BYSTANDER_CACHE", dir)
		began := time.Now()
		w := JFR(context.Background(), s.PID, Options{Window: 2 * time.Second})
		if len(w.Holds) == 0 {
			b.Fatalf("nothing held: %q", w.Limits)
		}
		return time.Since(began) - time.Duration(w.WindowNs), time.Duration(w.CostNs)
	}
	loaded := func(f func()) { // load's own limit is a minute: one per pair
		_, stop := load(b, s, s.Blocking, 4)
		defer stop()
		time.Sleep(300 * time.Millisecond) // connections made
		f()
	}
	loaded(func() { watch(cache) }) // Flight Recorder's first start in the JVM, and the compile
	var pasts, cpus [2][]time.Duration
	for range b.N {
		load, _ := os.ReadFile("/proc/loadavg")
		loaded(func() {
			for i, dir := range []string{unwritable, cache} {
				past, cpu := watch(dir)
				pasts[i], cpus[i] = append(pasts[i], past), append(cpus[i], cpu)
			}
		})
		b.Logf("source launcher past the window %s, CPU %s; cached jar %s, %s; load %s", pasts[0][len(pasts[0])-1].Round(time.Millisecond),
			cpus[0][len(cpus[0])-1].Round(time.Millisecond), pasts[1][len(pasts[1])-1].Round(time.Millisecond), cpus[1][len(cpus[1])-1].Round(time.Millisecond), strings.Join(strings.Fields(string(load))[:3], " "))
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return ds[len(ds)/2].Seconds()
	}
	b.ReportMetric(med(pasts[0]), "launcher-past-window-s")
	b.ReportMetric(med(pasts[1]), "cached-past-window-s")
	b.ReportMetric(med(cpus[0]), "launcher-cpu-s")
	b.ReportMetric(med(cpus[1]), "cached-cpu-s")
}
