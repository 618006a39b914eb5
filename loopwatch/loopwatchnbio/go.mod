module github.com/bystander-kit/bystander/loopwatch/loopwatchnbio

go 1.21

require (
	github.com/bystander-kit/bystander/loopwatch v0.0.0-00010101000000-000000000000
	github.com/lesismal/nbio v1.6.8
)

replace github.com/bystander-kit/bystander/loopwatch => ../
