package request

// Wire is one request as a connection sends it, rendered once by Parse.
// Its bytes are shared by every Mix made from the same Spec: read them,
// never write them.
type Wire struct {
	// Bytes is the whole request: line, headers and body, written as is.
	Bytes []byte
	// Head is a HEAD request: its answer is a head alone, whatever its
	// Content-Length says (RFC 9112 6.3), and a reader must not wait for
	// a body.
	Head bool
	// Index is the request's place in its Spec (0 for 'METHOD PATH').
	Index int
	// Label is the request's String, for messages.
	Label string
}

// Mix hands out a Spec's requests round robin: Next gives each in turn.
// The rendered bytes are shared and read only; the turn is the Mix's own
// and not guarded. A Mix belongs to one goroutine: a load generator's
// connections are driven by a Poller's single goroutine, so one Mix per
// Poller, or one per connection (Fork), needs no lock; connections on
// several goroutines (loadgen --threads) take one Mix each.
type Mix struct {
	wires []Wire
	next  int
}

// Mix returns a Mix over the spec's requests, starting at its first.
func (s *Spec) Mix() *Mix { return &Mix{wires: s.wires} }

// Next returns the request whose turn it is and moves the turn on.
func (m *Mix) Next() *Wire {
	w := &m.wires[m.next]
	if m.next++; m.next == len(m.wires) {
		m.next = 0
	}
	return w
}

// Len is the number of requests in the mix.
func (m *Mix) Len() int { return len(m.wires) }

// At returns request i (0 <= i < Len), leaving the turn alone: what a
// check that sends each request once uses.
func (m *Mix) At(i int) *Wire { return &m.wires[i] }

// Fork returns a Mix over the same bytes whose first turn is request
// start (modulo Len): one per connection, each starting at its number, so
// that connections started together do not all send the same request.
func (m *Mix) Fork(start int) *Mix {
	n := len(m.wires)
	return &Mix{wires: m.wires, next: ((start % n) + n) % n}
}
