module github.com/tidwall/evio

go 1.15

require github.com/kavu/go_reuseport v1.5.0
