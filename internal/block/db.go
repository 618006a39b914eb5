package block

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Call is a server's blocking call: its mode and, for Postgres, the
// database it asks.
type Call struct {
	Mode Mode
	DB   *DB
}

// For makes the call for d and returns how long it held what it blocks:
// the thread or goroutine, or for Postgres the database connection (from
// the moment it had one: the wait for a free connection is not the call's
// duration, it is the pool's queue). An error only comes from the database.
func (c Call) For(d time.Duration) (time.Duration, error) {
	if c.Mode != Postgres {
		return For(c.Mode, d), nil
	}
	if c.DB == nil {
		return 0, errors.New("block: postgres mode without a database")
	}
	return c.DB.Sleep(d)
}

// ErrDBPassword refuses a database URL with a password in it: a server's
// URL is in its argv, which every local user reads (ps), and a run writes
// its arguments into files made to be shared.
var ErrDBPassword = errors.New("the URL carries a password, which every local user could read in the servers' arguments (ps) " +
	"and a run would write where it is shared: give the URL without it, and the password in PGPASSWORD or ~/.pgpass (pgx reads both)")

// DBHosts checks a database URL as the kit takes it, a postgres:// URL
// without a password, and returns the hosts a connection would try (with
// PGHOST and the like applied; a unix socket's directory starts with /).
// Its errors never repeat the URL.
func DBHosts(raw string) ([]string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("want a postgres:// URL, postgres://USER@HOST:PORT/DB (a unix socket's directory as ?host=/DIR)")
	}
	q := u.Query()
	if _, ok := u.User.Password(); ok || q.Has("password") || q.Has("sslpassword") {
		return nil, ErrDBPassword
	}
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		if !slices.Contains(hosts, f.Host) {
			hosts = append(hosts, f.Host)
		}
	}
	return hosts, nil
}

// MaxDBConns bounds --db-pool: PostgreSQL's default max_connections is 100.
const MaxDBConns = 1000

// DBWait bounds how long a call waits for a free connection and its answer
// beyond the block it asked for: a database that stopped answering fails
// the request with a clear error instead of holding it for ever.
const DBWait = 30 * time.Second

// DB is a server's database: a pool of Conns connections, all opened when
// the server starts (a pool that connects lazily would put the connect in
// the first requests' block), which Postgres-mode calls take one at a time.
type DB struct {
	pool  *pgxpool.Pool
	Conns int
}

// OpenDB connects conns connections to the PostgreSQL server at url and
// checks that each answers, within ctx. When one fails it gives back
// those it took and closes them, also within ctx, and says why in the
// database's words ("sorry, too many clients already").
func OpenDB(ctx context.Context, url string, conns int) (*DB, error) {
	if conns < 1 || conns > MaxDBConns {
		return nil, fmt.Errorf("database pool of %d connections: want 1 to %d", conns, MaxDBConns)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
	cfg.MaxConnIdleTime, cfg.MaxConnLifetime = 24*time.Hour, 24*time.Hour
	cfg.HealthCheckPeriod = time.Minute
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	// Take every connection at once: each is opened and asked once now.
	held := make([]*pgxpool.Conn, 0, conns)
	release := func() {
		for _, c := range held {
			c.Release()
		}
	}
	for range conns {
		c, err := pool.Acquire(ctx)
		if err == nil {
			_, err = c.Exec(ctx, "SELECT 1")
			held = append(held, c)
		}
		if err != nil {
			// The pool's Close waits for every connection it lent: they are
			// given back first.
			release()
			closeWithin(ctx, pool)
			// pgx says each address it tried on a line of its own.
			return nil, fmt.Errorf("database at %s:%d: %s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, strings.Join(strings.Fields(err.Error()), " "))
		}
	}
	release()
	return &DB{pool: pool, Conns: conns}, nil
}

// closeWithin closes the pool, waiting for it until ctx ends: a database
// that stopped answering may hold each connection's goodbye for pgx's
// 15 s, and the server that opened the pool is on its way out.
func closeWithin(ctx context.Context, pool *pgxpool.Pool) {
	closed := make(chan struct{})
	go func() {
		pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
}

// Sleep asks the database for SELECT pg_sleep(d) on a free connection and
// returns how long the connection was held for it (the round trip
// included, the wait for the connection not).
func (db *DB) Sleep(d time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+DBWait)
	defer cancel()
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("database: no connection within %s: %w", d+DBWait, err)
	}
	defer c.Release()
	start := time.Now()
	if _, err := c.Exec(ctx, "SELECT pg_sleep($1)", pgx.QueryExecModeCacheStatement, max(d, 0).Seconds()); err != nil {
		return time.Since(start), fmt.Errorf("database: %w", err)
	}
	return time.Since(start), nil
}

// Close closes the connections.
func (db *DB) Close() {
	if db != nil {
		db.pool.Close()
	}
}
