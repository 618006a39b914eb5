module github.com/bystander-kit/bystander

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/bystander-kit/bystander/loopwatch v0.0.0-00010101000000-000000000000
	github.com/bystander-kit/bystander/loopwatch/loopwatchgnet v0.0.0-00010101000000-000000000000
	github.com/bystander-kit/bystander/loopwatch/loopwatchprom v0.0.0-00010101000000-000000000000
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/cloudwego/netpoll v0.7.2
	github.com/evanw/esbuild v0.28.2
	github.com/go-echarts/go-echarts/v2 v2.6.7
	github.com/jackc/pgx/v5 v5.12.0
	github.com/lesismal/nbio v1.6.8
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/common v0.72.0
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/tidwall/evio v1.0.8
	github.com/valyala/fasthttp v1.78.0
	golang.org/x/exp v0.0.0-20260824195058-e88cd73687aa
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/kavu/go_reuseport v1.5.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

tool honnef.co/go/tools/cmd/staticcheck

// evio v1.0.8 closes its listener's descriptor twice on stop; the kit
// carries the one-line fix (third_party/evio/README.md).
replace github.com/tidwall/evio => ./third_party/evio

// loopwatch, its Prometheus exporter and its gnet wrapper are modules of
// their own (a stranger's go get brings nothing of the kit's); the kit
// uses them as any user does, from this checkout.
replace (
	github.com/bystander-kit/bystander/loopwatch => ./loopwatch
	github.com/bystander-kit/bystander/loopwatch/loopwatchgnet => ./loopwatch/loopwatchgnet
	github.com/bystander-kit/bystander/loopwatch/loopwatchprom => ./loopwatch/loopwatchprom
)
