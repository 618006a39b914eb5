module github.com/bystander-kit/bystander/loopwatch

// The standard library alone, from Go 1.21 (log/slog's first release);
// CI vets under this line and tests on Go 1.21 itself (.ci/run).
go 1.21
