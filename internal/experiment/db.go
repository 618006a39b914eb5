package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/pgrun"
	"github.com/jackc/pgx/v5"
)

// startDB gets the database of --block-mode postgres: the user's
// (--pg-url), checked once, or a private PostgreSQL the run starts and
// stopDB removes (also on Ctrl-C and failures: Run defers it). It sets
// o.dbURL and o.dbDesc. Without --block-mode postgres it does nothing.
func startDB(ctx context.Context, o *Options, stdout io.Writer) (stopDB func(), err error) {
	stopDB = func() {}
	if o.BlockMode != "postgres" {
		return stopDB, nil
	}
	if o.PGURL != "" {
		if _, err := java.JDBCURL(o.PGURL); err != nil && o.usesJava() {
			return stopDB, fmt.Errorf("run.sh: --pg-url: the Java servers need a postgres:// URL: %w", err)
		}
		// pgx takes the password from PGPASSWORD or ~/.pgpass; the servers
		// get the one it found in their environment.
		cfg, err := pgx.ParseConfig(o.PGURL)
		if err != nil {
			return stopDB, fmt.Errorf("run.sh: --pg-url: %w", err)
		}
		version, err := serverVersion(ctx, cfg)
		if err != nil {
			return stopDB, fmt.Errorf("run.sh: --pg-url: %w", err)
		}
		o.dbURL, o.dbDesc, o.dbPassword = o.PGURL, fmt.Sprintf("PostgreSQL %s at --pg-url", version), cfg.Password
		return stopDB, nil
	}
	// Each server holds its pool's connections; a few more for whoever else
	// asks (psql while the run goes, the check below).
	in, err := pgrun.Start(ctx, pgrun.Options{MaxConnections: max(100, 2*o.DBPool+10)})
	if err != nil {
		if errors.Is(err, pgrun.ErrNotInstalled) {
			return stopDB, fmt.Errorf("run.sh: --block-mode postgres needs PostgreSQL: %s", pgrun.Install)
		}
		return stopDB, fmt.Errorf("run.sh: starting a private PostgreSQL: %w", err)
	}
	stopDB = func() {
		if err := in.Stop(); err != nil {
			fmt.Fprintf(stdout, "bystander: the private PostgreSQL: %v\n", err)
		}
	}
	var version string
	cfg, err := pgx.ParseConfig(in.URL())
	if err == nil {
		cfg.Password = in.Password()
		version, err = serverVersion(ctx, cfg)
	}
	if err != nil {
		stopDB()
		return func() {}, fmt.Errorf("run.sh: the private PostgreSQL: %w", err)
	}
	o.dbURL, o.dbDesc, o.dbPID, o.dbPassword = in.URL(), fmt.Sprintf("PostgreSQL %s, private to the run", version), in.PID, in.Password()
	o.dbDied = in.Died
	fmt.Fprintf(stdout, "bystander: started a private PostgreSQL %s on 127.0.0.1:%d (data in %s; removed when the run ends)\n", version, in.Port, in.Dir)
	return stopDB, nil
}

// dbGone is why a measurement fails once the private PostgreSQL died
// under the run, which it says once on the run's output; "" while it runs
// (and for the user's own database, which the run does not watch).
func (r *runner) dbGone() string {
	if r.o.dbDied == nil {
		return ""
	}
	err := r.o.dbDied()
	if err == nil {
		return ""
	}
	r.dbSaid.Do(func() {
		r.emit(Said{fmt.Sprintf("bystander: the private PostgreSQL died mid-run (%v): the measurements from here on fail, their figures would not be the servers'", err)})
	})
	return fmt.Sprintf("the private PostgreSQL died mid-run (%v): these figures would not be the server's", err)
}

// serverVersion asks a PostgreSQL its version, within 10 s.
func serverVersion(ctx context.Context, cfg *pgx.ConnConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	var v string
	if err := c.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", err
	}
	// "15.18 (Debian 15.18-0+deb12u1)": the number says it.
	if f := strings.Fields(v); len(f) > 0 && len(f[0]) <= 20 {
		return f[0], nil
	}
	return "", fmt.Errorf("server_version %q: not a version", v)
}

// dbPool is the run's --db-pool when its servers call a database.
func dbPool(o Options) int {
	if o.BlockMode != block.Postgres.String() {
		return 0
	}
	return o.DBPool
}

// dbSecrets are the variables through which a PostgreSQL password reaches
// pgx and libpq.
var dbSecrets = []string{"PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE"}

// dropDBSecrets takes the database's password out of the run's own
// environment once startDB has what it needs: every process the run starts
// inherits that environment (loadgen, the prober, chromium, jcmd, which runs
// as a JVM's user, who can read its environment), and only the servers are
// to have the password, handed to them by serverEnv.
func dropDBSecrets() {
	for _, k := range dbSecrets {
		os.Unsetenv(k)
	}
}
