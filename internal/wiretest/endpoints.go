package wiretest

import (
	"strconv"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
)

// CheckEndpoints asks each of the protocol's four routes once (20 ms block
// and delay) on one keep-alive connection and checks the answer against
// docs/protocol.md: status, body, and the timing headers, X-Loop within
// [0, loops) on a loop server (loops > 0) and absent on a pool server
// (loops == 0), which sends X-Queued-Ns instead, and on a server with
// neither (loops < 0: a goroutine per connection or request), which sends
// neither. HEAD answers the headers without the body.
func CheckEndpoints(t *testing.T, addr string, loops int) {
	t.Helper()
	c := Dial(t, addr)
	before := time.Now().UnixNano()
	for _, tc := range []struct {
		target, body  string
		blocked, cont bool
	}{
		{"/fast", protocol.BodyFast, false, false},
		{"/slow?block=20ms", protocol.BodySlow, true, false},
		{"/async?delay=20ms", protocol.BodyAsync, false, true},
		{"/offload?block=20ms", protocol.BodyOffload, true, true},
	} {
		a := c.MustGet(tc.target)
		if a.Status != 200 || a.Body != tc.body {
			t.Fatalf("%s: %d %q", tc.target, a.Status, a.Body)
		}
		if l := a.Int(protocol.HeaderLoop); loops > 0 && (l < 0 || l >= int64(loops)) {
			t.Errorf("%s: X-Loop %q", tc.target, a.Header.Get(protocol.HeaderLoop))
		}
		if loops <= 0 && a.Header.Get(protocol.HeaderLoop) != "" {
			t.Errorf("%s: a server without loops sent X-Loop", tc.target)
		}
		if loops == 0 {
			if q := a.Int(protocol.HeaderQueuedNs); q < 0 || q > int64(time.Second) {
				t.Errorf("%s: X-Queued-Ns %d", tc.target, q)
			}
		}
		hs := a.Int(protocol.HeaderHandlerStart)
		if hs < before || hs > time.Now().UnixNano() {
			t.Errorf("%s: X-Handler-Start %d outside the request", tc.target, hs)
		}
		if b := a.Int(protocol.HeaderBlockedNs); tc.blocked != (b >= 0) || (tc.blocked && b < int64(20*time.Millisecond)) {
			t.Errorf("%s: X-Blocked-Ns %q", tc.target, a.Header.Get(protocol.HeaderBlockedNs))
		}
		cs := a.Int(protocol.HeaderContinuationStart)
		if tc.cont != (cs >= 0) || (tc.cont && cs-hs < int64(20*time.Millisecond)) {
			t.Errorf("%s: X-Continuation-Start %d, handler start %d", tc.target, cs, hs)
		}
		if a.Elapsed < 20*time.Millisecond && tc.target != "/fast" {
			t.Errorf("%s answered in %s, before its 20ms", tc.target, a.Elapsed)
		}
	}
	a, err := c.Raw("HEAD /async HTTP/1.1\r\nHost: t\r\n\r\n", "HEAD")
	if err != nil || a.Status != 200 || a.Body != "" || a.Header.Get("Content-Length") != strconv.Itoa(len(protocol.BodyAsync)) {
		t.Fatalf("HEAD /async: %+v %v", a, err)
	}
}
