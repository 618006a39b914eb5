package wiretest

import (
	"context"
	"os"
	"testing"

	"github.com/bystander-kit/bystander/internal/pgrun"
)

// NeedPostgres skips the test outside CI when PostgreSQL is not installed;
// CI installs it, so there a missing one fails.
func NeedPostgres(t *testing.T) {
	t.Helper()
	if _, _, err := pgrun.BinDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs PostgreSQL: %v", err)
		}
		t.Skip(err)
	}
}

// Postgres starts a private PostgreSQL for the test (NeedPostgres first),
// stopped and removed when the test ends. Its servers' password is in the
// test's PGPASSWORD (as a run hands it to its servers), where pgx and the
// servers the test starts find it: the test may not be parallel.
func Postgres(t *testing.T) *pgrun.Instance {
	t.Helper()
	return PostgresWith(t, pgrun.Options{})
}

// PostgresWith is Postgres started with o (a small max_connections, say).
func PostgresWith(t *testing.T, o pgrun.Options) *pgrun.Instance {
	t.Helper()
	NeedPostgres(t)
	in, err := pgrun.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Stop() })
	t.Setenv("PGPASSWORD", in.Password())
	return in
}
