package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ConnectOptions say how to reach a NATS server or cluster.
type ConnectOptions struct {
	// URLs are comma-separated seed URLs, e.g. nats://a:4222,nats://b:4222.
	URLs string
	// Setting names where URLs came from, for error messages ("--nats",
	// "TROUPE_NATS_URL"); default "nats.url".
	Setting string
	// Token, or User and Password, or CredsFile (a .creds file with a JWT
	// and an nkey seed) authenticate the client.
	Token, User, Password, CredsFile string
	// Creds are the contents of a .creds file, for a process that holds
	// them in memory (Auth.Creds); CredsFile wins when both are set.
	Creds []byte
	// TLSCA verifies the server; TLSCert and TLSKey are a client
	// certificate for servers that ask for one.
	TLSCA, TLSCert, TLSKey string
	// Name is the connection's name as the server shows it.
	Name string
	// Prefix is the first token of troupe's subjects; default "troupe".
	Prefix string
	// ReconnectBuffer bounds what is buffered while reconnecting
	// (default 8 MiB); beyond it publishes fail and count as dropped.
	ReconnectBuffer int
	// Timeout bounds the first connection (default 5s).
	Timeout time.Duration
}

// Conn is a connection to NATS with JetStream, and the subject prefix.
type Conn struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	prefix string
	id     Identity
	closed chan struct{} // closed with the connection (nil for Wrap's)
	why    atomic.Pointer[error]
	log    zerolog.Logger // says what the connection waits for (Await)
}

// Connect connects and checks that JetStream answers. It reconnects
// forever after that; the first connection failing is an error that names
// the setting to fix.
func Connect(ctx context.Context, o ConnectOptions, log zerolog.Logger) (*Conn, error) {
	if o.Setting == "" {
		o.Setting = "nats.url"
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := checkPrefix(o.Prefix); err != nil {
		return nil, err
	}
	if o.ReconnectBuffer == 0 {
		o.ReconnectBuffer = 8 << 20
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	urls := strings.TrimSpace(o.URLs)
	if urls == "" {
		return nil, fmt.Errorf("%s is empty: give a NATS URL such as nats://127.0.0.1:4222", o.Setting)
	}
	c := &Conn{prefix: o.Prefix, closed: make(chan struct{})}
	opts := []nats.Option{nats.Name(o.Name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(o.ReconnectBuffer), nats.Timeout(o.Timeout),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !nc.IsClosed() { // closing is no outage
				log.Warn().Err(err).Msg("nats disconnected; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("nats reconnected") }),
		nats.ErrorHandler(func(nc *nats.Conn, s *nats.Subscription, err error) {
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Warn().Err(err).Str("subject", subj).Msg("nats")
			if errors.Is(err, nats.ErrAuthRevoked) {
				// Revoked: no reconnect can succeed. Closed says so at once.
				c.why.CompareAndSwap(nil, &err)
				go nc.Close()
			}
		}),
	}
	opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }))
	auth, id, creds, err := authOptions(o)
	if err != nil {
		return nil, err
	}
	opts = append(opts, auth...)
	for _, f := range []struct{ key, path string }{{"nats.tls_ca", o.TLSCA}, {"nats.tls_cert", o.TLSCert}, {"nats.tls_key", o.TLSKey}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.key, f.path, err)
		}
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, errors.New("nats.tls_cert and nats.tls_key go together")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	// A role's user has an inbox of its own, which no other user may read
	// (credentials of an earlier troupe share _INBOX).
	if p := id.Inbox(); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, connectError(o, urls, creds, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: jetstream: %w", o.Setting, err)
	}
	if err := awaitJetStream(ctx, js, o, urls, log); err != nil {
		nc.Close()
		return nil, err
	}
	c.nc, c.js, c.id, c.log = nc, js, id, log
	return c, nil
}

// authOptions are the options that authenticate o's client, the identity
// its credentials name, and how to name them in an error.
func authOptions(o ConnectOptions) (opts []nats.Option, id Identity, creds string, err error) {
	creds = "no credentials (nats.token, nats.user and nats.password, or nats.creds)"
	switch {
	case o.CredsFile != "":
		b, err := os.ReadFile(o.CredsFile)
		if err != nil {
			return nil, id, "", fmt.Errorf("nats.creds %s: %w", o.CredsFile, err)
		}
		if id, err = ParseCreds(b); err != nil {
			return nil, id, "", fmt.Errorf("nats.creds %s: %w", o.CredsFile, err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
		creds = "the credentials in nats.creds " + o.CredsFile
	case len(o.Creds) > 0:
		if id, err = ParseCreds(o.Creds); err != nil {
			return nil, id, "", fmt.Errorf("credentials: %w", err)
		}
		tok, err := jwt.ParseDecoratedJWT(o.Creds)
		if err != nil {
			return nil, id, "", fmt.Errorf("credentials: %w", err)
		}
		kp, err := jwt.ParseDecoratedUserNKey(o.Creds)
		if err != nil {
			return nil, id, "", fmt.Errorf("credentials: %w", err)
		}
		seed, _ := kp.Seed()
		opts = append(opts, nats.UserJWTAndSeed(tok, string(seed)))
		creds = "the role credentials given"
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
		creds = "the token in nats.token (TROUPE_NATS_TOKEN)"
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
		creds = "nats.user " + o.User + " with nats.password (TROUPE_NATS_PASSWORD)"
	}
	return opts, id, creds, nil
}

// Wrap makes a Conn of a connection the caller made (and closes): prefix
// "" is DefaultPrefix.
func Wrap(nc *nats.Conn, prefix string) (*Conn, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("wrap connection: jetstream: %w", err)
	}
	return &Conn{nc: nc, js: js, prefix: prefix, log: zerolog.Nop()}, nil
}

// NATS is the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// JetStream is the connection's JetStream context.
func (c *Conn) JetStream() jetstream.JetStream { return c.js }

// Prefix is the subject prefix.
func (c *Conn) Prefix() string { return c.prefix }

// Identity is who the connection's credentials say it is (the zero
// Identity without a user JWT).
func (c *Conn) Identity() Identity { return c.id }

// Closed is closed once the connection is closed for good: by Close, or
// by the server refusing its credentials (revoked) when it reconnects.
// Err says why. Nil for a connection made by Wrap.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Err is why the connection closed, once Closed (its credentials
// revoked), or the last error it had.
func (c *Conn) Err() error {
	if why := c.why.Load(); why != nil {
		return *why
	}
	return c.nc.LastError()
}

// Names are the streams and buckets of the connection's prefix.
func (c *Conn) Names() Names { return NamesFor(c.prefix) }

// Close flushes what is pending and closes the connection.
func (c *Conn) Close() {
	if c.nc.IsConnected() {
		_ = c.nc.FlushTimeout(5 * time.Second)
	}
	c.nc.Close()
}

// connectError says why the first connection failed, naming the setting
// to fix.
func connectError(o ConnectOptions, urls, creds string, err error) error {
	where := o.Setting + " " + redactURL(urls)
	msg := strings.ToLower(err.Error())
	var verr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(msg, "authorization") || strings.Contains(msg, "authentication"):
		return fmt.Errorf("%s: the server refused %s: %w", where, creds, err)
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("%s: the server requires TLS: give its CA in nats.tls_ca (and a client certificate in nats.tls_cert and nats.tls_key if it asks for one): %w", where, err)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%s: nats.tls_ca, nats.tls_cert or nats.tls_key asks for TLS, which the server does not offer: %w", where, err)
	case errors.Is(err, nats.ErrTLS) || errors.As(err, &verr) || strings.Contains(msg, "x509:") || strings.Contains(msg, "tls:"):
		return fmt.Errorf("%s: TLS failed: check nats.tls_ca (the CA that signed the server's certificate), nats.tls_cert and nats.tls_key (a client certificate the server trusts): %w", where, err)
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("%s: no server reachable: %w", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// redactURL drops user info from URLs for messages.
func redactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if s := strings.Index(p, "://"); s >= 0 && s < at {
				parts[i] = p[:s+3] + "[redacted]@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// awaitJetStream waits until JetStream answers: a cluster that is
// forming, or electing its meta leader, answers late or not at all for a
// while (waited for, saying so, for at most StartWait); a server without
// JetStream says so at once.
func awaitJetStream(ctx context.Context, js jetstream.JetStream, o ConnectOptions, urls string, log zerolog.Logger) error {
	err := awaitStart(ctx, log, o.Setting+" "+redactURL(urls)+": JetStream", func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		_, err := js.AccountInfo(actx)
		return err
	})
	switch {
	case err == nil:
		return nil
	case Transient(err):
		return fmt.Errorf("%s %s: JetStream did not answer within %s (a cluster without a majority of its servers up?): %w",
			o.Setting, redactURL(urls), StartWait, err)
	}
	return fmt.Errorf("%s %s: the server has no JetStream (start nats-server with -js): %w", o.Setting, redactURL(urls), err)
}
