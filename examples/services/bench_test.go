package services_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/services"
)

// BenchmarkBlockingCall: each service's blocking route at 1 caller, after
// 300 calls of warm-up (a JVM compiles what runs hot), and the ledger's
// own round trip; the median is reported beside the mean (ns/op).
//
//	go test -run '^$' -bench BlockingCall ./examples/services
func BenchmarkBlockingCall(b *testing.B) {
	b.Run("ledger", func(b *testing.B) {
		l := services.StartLedger(b, 0)
		c, err := net.Dial("tcp", l.Addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		call := func() error {
			if _, err := fmt.Fprintf(c, "BALANCE 42\n"); err != nil {
				return err
			}
			_, err := r.ReadString('\n')
			return err
		}
		bench(b, call)
	})
	for _, k := range services.Kinds {
		b.Run(string(k), func(b *testing.B) {
			s := services.Start(b, k, services.Options{})
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			call := func() error {
				resp, err := c.Do(s.Blocking.HTTP(s.URL()))
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("%s", resp.Status)
				}
				return err
			}
			for range 300 {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
			bench(b, call)
		})
	}
}

func bench(b *testing.B, call func() error) {
	var d []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "median-ms")
}
