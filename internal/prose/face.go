package prose

import (
	"encoding/json"
	"math"

	"github.com/bystander-kit/bystander/internal/findings"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// faceSchema names the JSON face of a run's findings (findings.json).
const faceSchema = "bystander.findings/v1"

// Face is the findings as JSON: the figures and the words of every row,
// as the tables and the report give them, for a reader that wants them
// without the kit, and for goldens where the figures are computed. It is
// derived from the run directory; the directory stays the record.
type Face struct {
	Schema   string                   `json:"schema"`
	Lead     string                   `json:"lead"`
	Headline FaceHeadline             `json:"headline"`
	Shared   string                   `json:"shared,omitempty"`
	Claims   []FaceClaim              `json:"claims"`
	Servers  []findings.ServerSummary `json:"servers"`
	Classes  []FaceClass              `json:"classes"`
	Sweep    []FaceLoad               `json:"sweep"`
	Stall    []FaceStall              `json:"stall"`
	Offload  []FaceLoad               `json:"offload"`
	Trace    []FaceTrace              `json:"trace"`
	Cliff    []FaceLoad               `json:"cliff"`
	Slip     []FaceSlip               `json:"slip,omitempty"`
	// AsIs are the servers measured as they are (--load), with their sweep.
	AsIs        []FaceAsIs      `json:"as_is,omitempty"`
	Cost        []FaceCost      `json:"cost"`
	Published   []FacePublished `json:"published"`
	NotMeasured []string        `json:"not_measured"`
	// NotRead names each measurement whose files were not read, and why.
	NotRead []findings.Unread `json:"not_read"`
	Noticed []string          `json:"noticed"`
}

// FaceAsIs is a server measured as it is: the figures inferred from its
// sweep, its class, and its sweep step by step.
type FaceAsIs struct {
	Server      string         `json:"server"`
	Load        string         `json:"load"`
	Bystander   string         `json:"bystander"`
	CallMs      *FaceFigure    `json:"call_ms"`
	PlateauPerS float64        `json:"plateau_per_s"`
	PlateauAt   int            `json:"plateau_at"`
	Workers     float64        `json:"workers"`
	AtLeast     bool           `json:"at_least,omitempty"`
	CeilingPerS float64        `json:"ceiling_per_s"`
	Ceiling     string         `json:"ceiling"`
	Class       string         `json:"class"`
	Text        string         `json:"text"`
	Forgives    int            `json:"forgives,omitempty"`
	CPU         string         `json:"cpu"`
	CPUKnown    bool           `json:"cpu_known"`
	CPUTold     bool           `json:"cpu_told"`
	CPUBound    bool           `json:"cpu_bound"`
	Steps       []FaceAsIsStep `json:"steps"`
	Watch       FaceWatch      `json:"watch"`
}

// FaceWatch is its top step watched: what held its threads (the service
// as the watch's file holds it, Forgiven said for a pool whose bystanders
// were unharmed), what watching cost (watched over unwatched, medians),
// in lines as the tables say them; or why it was not watched.
type FaceWatch struct {
	Watched bool             `json:"watched"`
	Why     string           `json:"why,omitempty"`
	Heading string           `json:"heading,omitempty"`
	Lines   []string         `json:"lines"`
	Service *culprit.Service `json:"service,omitempty"`
	// ThroughputRatio and BystanderRatio: watched over unwatched (0: not known).
	ThroughputRatio float64       `json:"throughput_ratio,omitempty"`
	BystanderRatio  float64       `json:"bystander_ratio,omitempty"`
	Step            *FaceAsIsStep `json:"step,omitempty"`
}

// FaceAsIsStep is one step of its sweep.
type FaceAsIsStep struct {
	ID            string      `json:"id"`
	Callers       int         `json:"callers"`
	ReqPerS       *FaceFigure `json:"req_per_s"`
	LoadP50Ms     *FaceFigure `json:"load_p50_ms"`
	NotAnswered   int64       `json:"not_answered"`
	Bound         string      `json:"bound"`
	BoundText     string      `json:"bound_text"`
	FastP50Ms     *FaceFigure `json:"fast_p50_ms"`
	FastP99Ms     *FaceFigure `json:"fast_p99_ms"`
	Stalled       string      `json:"stalled"`
	Which         string      `json:"which"`
	StalledWaitMs *FaceFigure `json:"stalled_wait_ms"`
	OthersWaitMs  *FaceFigure `json:"others_wait_ms"`
	UnloadedMs    *FaceFigure `json:"unloaded_ms"`
	Said          string      `json:"said,omitempty"`
	Unjudged      []string    `json:"unjudged,omitempty"`
	Why           string      `json:"why,omitempty"`
}

func faceAsIs(a findings.AsIs) FaceAsIs {
	x := FaceAsIs{Server: a.Server, Load: a.Load, Bystander: a.Bystander, CallMs: face(a.Call, 1e-3), PlateauPerS: math.Round(a.Plateau*10) / 10, PlateauAt: a.PlateauAt,
		Workers: math.Round(a.Workers*100) / 100, AtLeast: a.AtLeast, CeilingPerS: math.Round(a.Ceiling*10) / 10, Ceiling: AsIsCeiling(a), Class: a.Class, Text: AsIsClass(a),
		Forgives: a.Forgives, CPU: AsIsCPU(a), CPUKnown: a.CPUKnown, CPUTold: a.CPUTold, CPUBound: a.CPUBound, Steps: []FaceAsIsStep{}}
	for _, st := range a.Steps {
		x.Steps = append(x.Steps, faceAsIsStep(st))
	}
	x.Watch = FaceWatch{Watched: a.Watch.Watched(), Why: AsIsWatchWhy(a.Watch), Lines: AsIsWatchLines(a), Service: AsIsWatchService(a),
		ThroughputRatio: math.Round(a.Watch.Throughput*1000) / 1000, BystanderRatio: math.Round(a.Watch.Bystander*1000) / 1000}
	if a.Watch.Step != nil {
		x.Watch.Heading = AsIsWatchHeading(a.Watch)
		s := faceAsIsStep(*a.Watch.Step)
		x.Watch.Step = &s
	}
	return x
}

func faceAsIsStep(st findings.AsIsStep) FaceAsIsStep {
	s := FaceAsIsStep{ID: st.Step.ID, Callers: st.Step.Conc, ReqPerS: face(st.Throughput, 1), LoadP50Ms: face(st.LoadP50, 1e-3), NotAnswered: st.NotAnswered(),
		Bound: st.Kind(), FastP50Ms: face(st.Fast.P50, 1e-3), FastP99Ms: face(st.Fast.P99, 1e-3), Stalled: AsIsStalled(st), Which: AsIsWho(st),
		StalledWaitMs: face(st.StalledWait, 1e-3), OthersWaitMs: face(st.OthersWait, 1e-3), UnloadedMs: face(st.Unloaded, 1e-3), Said: st.Said, Unjudged: asIsUnjudged(st)}
	if b := st.Bound(); b != nil {
		s.BoundText = BoundLine(b)
	}
	if !st.OK() {
		s.Why = GroupWhy(st.Group)
	}
	return s
}

// FaceSlip is one server's slip: each side of the step against the
// ceiling that binds it.
type FaceSlip struct {
	ID       string       `json:"id"`
	Server   string       `json:"server"`
	Ceiling  string       `json:"ceiling"`
	Before   FaceSlipSide `json:"before"`
	After    FaceSlipSide `json:"after"`
	Sentence string       `json:"sentence"`
}

// FaceSlipSide is one side of the slip's step.
type FaceSlipSide struct {
	AskedMs         float64     `json:"asked_ms"`
	CeilingPerS     float64     `json:"ceiling_per_s"`
	ReqPerS         *FaceFigure `json:"req_per_s"`
	MeasuredBlockMs *FaceFigure `json:"measured_block_ms"`
	ShareOfCeiling  *FaceFigure `json:"share_of_ceiling"`
	FastP50Ms       *FaceFigure `json:"fast_p50_ms"`
	FastDue         int64       `json:"fast_due"`
	FastUnanswered  int64       `json:"fast_unanswered"`
}

func faceSlipSide(h findings.SlipHalf) FaceSlipSide {
	return FaceSlipSide{AskedMs: float64(h.Block.Microseconds()) / 1e3, CeilingPerS: math.Round(h.Ceiling*10) / 10, ReqPerS: face(h.PerS, 1),
		MeasuredBlockMs: face(h.MeasuredBlock, 1e-6), ShareOfCeiling: face(h.Share, 1), FastP50Ms: face(h.Fast, 1e-3), FastDue: h.FastProbes, FastUnanswered: h.FastCensored}
}

// FaceFigure is a figure over the repetitions: median, smallest, largest.
type FaceFigure struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func face(v findings.Figure, scale float64) *FaceFigure {
	if !v.OK() {
		return nil
	}
	lo, hi := v.Spread()
	r := func(x float64) float64 { return math.Round(x*scale*1000) / 1000 }
	return &FaceFigure{Median: r(v.Median()), Min: r(lo), Max: r(hi), N: len(v)}
}

// FaceLoad is a load row (sweep, offload, cliff).
type FaceLoad struct {
	ID        string      `json:"id"`
	Server    string      `json:"server"`
	Endpoint  string      `json:"endpoint"`
	Variant   string      `json:"variant,omitempty"`
	Callers   int         `json:"callers"`
	ReqPerS   *FaceFigure `json:"req_per_s"`
	Blocked   string      `json:"blocked"`
	Bound     string      `json:"bound"`
	BoundText string      `json:"bound_text"`
	FastP50Ms *FaceFigure `json:"fast_p50_ms"`
	FastP99Ms *FaceFigure `json:"fast_p99_ms"`
	Saturated string      `json:"saturated,omitempty"`
	Why       string      `json:"why,omitempty"`
}

// FaceStall is a stall row.
type FaceStall struct {
	ID            string      `json:"id"`
	Server        string      `json:"server"`
	K             int         `json:"k"`
	Stalled       string      `json:"stalled"`
	Expected      string      `json:"expected"`
	Exactly       string      `json:"exactly_those"`
	StalledWaitMs *FaceFigure `json:"stalled_wait_ms"`
	OthersWaitMs  *FaceFigure `json:"others_wait_ms"`
	Machine       string      `json:"machine"`
	Detector      string      `json:"detector"`
	Culprit       string      `json:"culprit,omitempty"` // where the detector, or the outside view, saw the loops held
	Outside       []string    `json:"outside,omitempty"` // the rest of what the outside view said
	Mismatch      []string    `json:"mismatch,omitempty"`
	Unjudged      []string    `json:"unjudged,omitempty"`
	BlockOff      string      `json:"block_off,omitempty"`
	Why           string      `json:"why,omitempty"`
}

// FaceTrace is a trace row.
type FaceTrace struct {
	ID         string      `json:"id"`
	Server     string      `json:"server"`
	AcceptedMs *FaceFigure `json:"accepted_ms"`
	LatenessMs *FaceFigure `json:"lateness_ms"`
	ReturnMs   *FaceFigure `json:"return_ms"`
	TotalP50Ms *FaceFigure `json:"total_p50_ms"`
	TotalP99Ms *FaceFigure `json:"total_p99_ms"`
	Samples    *FaceFigure `json:"samples"`
}

// FaceCost is one measurement's cost and bound.
type FaceCost struct {
	ID             string  `json:"id"`
	Server         string  `json:"server"`
	Repeat         int     `json:"repeat"`
	ServerCPUUs    float64 `json:"server_cpu_us_per_request"`
	CtxSwitches    float64 `json:"ctx_switches_per_request"`
	NotMeasured    bool    `json:"server_not_measured,omitempty"`
	GeneratorCPUUs float64 `json:"generator_cpu_us_per_request"`
	Bound          string  `json:"bound"`
}

func faceLoad(r findings.LoadRow) FaceLoad {
	l := FaceLoad{ID: r.Step.ID, Server: r.Step.Server.Name, Endpoint: r.Step.Endpoint, Variant: r.Step.Variant, Callers: r.Step.Conc,
		ReqPerS: face(r.Throughput, 1), Blocked: BlockedText(r), Bound: r.Kind(), FastP50Ms: face(r.Fast.P50, 1e-3), FastP99Ms: face(r.Fast.P99, 1e-3),
		Saturated: Saturated(r.Fast)}
	if b := r.Bound(); b != nil {
		l.BoundText = BoundLine(b)
	}
	if !r.OK() {
		l.Why = GroupWhy(r.Group)
	}
	return l
}

// FaceOf computes the JSON face of f.
func FaceOf(f *findings.Findings) Face {
	x := Face{Schema: faceSchema, Lead: Lead(f), Headline: Headline(f), Shared: SharedText(f), Classes: Classes(f), Claims: FaceClaims(f), Servers: f.Servers, Published: Published(f),
		NotMeasured: NotMeasured(f), NotRead: f.Unread, Noticed: Noticed(f)}
	for _, r := range f.Sweep {
		x.Sweep = append(x.Sweep, faceLoad(r.LoadRow))
	}
	for _, r := range f.Offload {
		x.Offload = append(x.Offload, faceLoad(r))
	}
	for _, r := range f.Cliff {
		x.Cliff = append(x.Cliff, faceLoad(r))
	}
	for _, r := range f.Stall {
		s := FaceStall{ID: r.Step.ID, Server: r.Step.Server.Name, K: r.Step.K, Stalled: StallStalled(r), Expected: num(r.Expected, "%.0f"),
			Exactly: StallMatch(r), StalledWaitMs: face(r.StalledWait, 1e-3), OthersWaitMs: face(r.OthersWait, 1e-3), Machine: StallMachine(r),
			Detector: StallDetector(r), Culprit: StallCulprit(r), Outside: r.Outside, Mismatch: sayAll(r.Mismatch, StallMismatch), Unjudged: sayAll(r.Unjudged, StallUnjudged), BlockOff: BlockOffText(r.Step.Block.D(), r.BlockOffNs)}
		if !r.OK() {
			s.Why = GroupWhy(r.Group)
		}
		x.Stall = append(x.Stall, s)
	}
	for _, r := range f.Trace {
		x.Trace = append(x.Trace, FaceTrace{ID: r.Step.ID, Server: r.Step.Server.Name, AcceptedMs: face(r.Accepted.P50, 1e-3), LatenessMs: face(r.Lateness.P50, 1e-3),
			ReturnMs: face(r.Return.P50, 1e-3), TotalP50Ms: face(r.Total.P50, 1e-3), TotalP99Ms: face(r.Total.P99, 1e-3), Samples: face(r.Total.N, 1)})
	}
	for _, r := range f.Slip {
		x.Slip = append(x.Slip, FaceSlip{ID: r.Step.ID, Server: r.Step.Server.Name, Ceiling: SlipCeiling(r), Before: faceSlipSide(r.Before),
			After: faceSlipSide(r.After), Sentence: SlipSentence(r)})
	}
	for _, a := range f.AsIs {
		x.AsIs = append(x.AsIs, faceAsIs(a))
	}
	for _, c := range f.Cost {
		x.Cost = append(x.Cost, FaceCost{ID: c.ID, Server: c.Server, Repeat: c.Repeat, ServerCPUUs: math.Round(c.Cost.ServerCPUUsPerRequest*10) / 10,
			CtxSwitches: math.Round(c.Cost.CtxSwitchesPerRequest*100) / 100, NotMeasured: c.Cost.ServerNotMeasured,
			GeneratorCPUUs: math.Round(c.Cost.GeneratorCPUUsPerReq*10) / 10, Bound: BoundLine(c.Bound)})
	}
	return x
}

// FaceJSON is the face as findings.json holds it.
func FaceJSON(f *findings.Findings) []byte {
	b, _ := json.MarshalIndent(FaceOf(f), "", "  ")
	return append(b, '\n')
}

// sayAll says each of xs with say (nil for none, as the face omits it).
func sayAll[T any](xs []T, say func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, say(x))
	}
	return out
}
