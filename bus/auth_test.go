package bus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// startServer runs a real in-process server with JetStream configured by
// opts on a random loopback port.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs, opts.JetStream, opts.StoreDir = "127.0.0.1", -1, true, true, true, t.TempDir()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// connects checks that o reaches JetStream.
func connects(t *testing.T, o ConnectOptions) {
	t.Helper()
	c, err := Connect(t.Context(), o, zerolog.Nop())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatalf("JetStream over the connection: %v", err)
	}
}

// refused checks that o fails with an error naming every one of want.
func refused(t *testing.T, what string, o ConnectOptions, want ...string) {
	t.Helper()
	_, err := Connect(t.Context(), o, zerolog.Nop())
	if err == nil {
		t.Fatalf("%s: connected", what)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not name %q", what, err, w)
		}
	}
}

// User and password: the right pair connects, a wrong one is a clear
// error naming the settings and not the password.
func TestConnectUserPassword(t *testing.T) {
	s := startServer(t, &server.Options{Username: "agent", Password: "correct-horse"})
	connects(t, ConnectOptions{URLs: s.ClientURL(), User: "agent", Password: "correct-horse"})
	refused(t, "wrong password", ConnectOptions{URLs: s.ClientURL(), User: "agent", Password: "wrong", Setting: "--nats"},
		"--nats nats://127.0.0.1:", "refused nats.user agent with nats.password")
	_, err := Connect(t.Context(), ConnectOptions{URLs: s.ClientURL(), User: "agent", Password: "wrong"}, zerolog.Nop())
	if err == nil || strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the password: %v", err)
	}
	refused(t, "no credentials", ConnectOptions{URLs: s.ClientURL()}, "refused no credentials (nats.token")
}

// A token: the right one connects, a wrong one names nats.token.
func TestConnectToken(t *testing.T) {
	s := startServer(t, &server.Options{Authorization: "s3cret-token"})
	connects(t, ConnectOptions{URLs: s.ClientURL(), Token: "s3cret-token"})
	refused(t, "wrong token", ConnectOptions{URLs: s.ClientURL(), Token: "nope"}, "nats.token", "TROUPE_NATS_TOKEN")
}

// A .creds file (a user JWT and its nkey seed) against a server in
// operator mode: the right one connects and uses JetStream; a user of an
// account the server does not trust, or a missing file, is an error that
// names nats.creds.
func TestConnectCreds(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	if _, err := opClaims.Encode(op); err != nil { // signs and fills the claims
		t.Fatal(err)
	}
	account := func(signer nkeys.KeyPair, js bool) (nkeys.KeyPair, string, string) {
		kp, _ := nkeys.CreateAccount()
		pub, _ := kp.PublicKey()
		ac := jwt.NewAccountClaims(pub)
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		tok, err := ac.Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		return kp, pub, tok
	}
	acc, accPub, accJWT := account(op, true)
	_, sysPub, sysJWT := account(op, false)
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Store(sysPub, sysJWT); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver, SystemAccount: sysPub})
	credsFile := func(name string, issuer nkeys.KeyPair) string {
		u, _ := nkeys.CreateUser()
		pub, _ := u.PublicKey()
		seed, _ := u.Seed()
		tok, err := jwt.NewUserClaims(pub).Encode(issuer)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jwt.FormatUserConfig(tok, seed)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := credsFile("agent.creds", acc)
	connects(t, ConnectOptions{URLs: s.ClientURL(), CredsFile: good})
	stranger, _ := nkeys.CreateAccount() // an account no operator signed
	bad := credsFile("stranger.creds", stranger)
	refused(t, "untrusted creds", ConnectOptions{URLs: s.ClientURL(), CredsFile: bad}, "refused the credentials in nats.creds "+bad)
	refused(t, "missing creds", ConnectOptions{URLs: s.ClientURL(), CredsFile: good + ".gone"}, "nats.creds "+good+".gone")
	refused(t, "no creds", ConnectOptions{URLs: s.ClientURL()}, "refused no credentials")
}

// pki is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type pki struct {
	dir                                              string
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	p := pki{dir: dir}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyFile := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "EC PRIVATE KEY", der)
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "troupe test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), keyFile(name+"-key.pem", k)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// TLS with a client certificate: the CA and a client certificate connect;
// no CA, another CA, or no client certificate are errors that name the
// TLS settings; a missing file names its setting.
func TestConnectTLS(t *testing.T) {
	p := newPKI(t)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.serverCert, KeyFile: p.serverKey, CaFile: p.ca, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, &server.Options{TLS: true, TLSVerify: true, TLSConfig: tc, TLSTimeout: 5})
	url := s.ClientURL()
	connects(t, ConnectOptions{URLs: url, TLSCA: p.ca, TLSCert: p.clientCert, TLSKey: p.clientKey})
	other := newPKI(t)
	refused(t, "no TLS settings", ConnectOptions{URLs: url}, "nats.tls_ca")
	refused(t, "another CA", ConnectOptions{URLs: url, TLSCA: other.ca, TLSCert: p.clientCert, TLSKey: p.clientKey}, "TLS failed", "nats.tls_ca")
	refused(t, "no client certificate", ConnectOptions{URLs: url, TLSCA: p.ca}, "nats.tls_cert")
	refused(t, "a client certificate of another CA", ConnectOptions{URLs: url, TLSCA: p.ca, TLSCert: other.clientCert, TLSKey: other.clientKey}, "nats.tls_cert")
	refused(t, "missing CA file", ConnectOptions{URLs: url, TLSCA: p.ca + ".gone"}, "nats.tls_ca "+p.ca+".gone")
	refused(t, "cert without key", ConnectOptions{URLs: url, TLSCA: p.ca, TLSCert: p.clientCert}, "nats.tls_cert and nats.tls_key go together")
}

// The folder auth init wrote serves a server as it is, read-only (a
// Kubernetes Secret): reading it changes no file and adds none, and gives
// the same account; a folder that lacks a creds file is refused.
func TestReadAuthDirWritesNothing(t *testing.T) {
	dir := t.TempDir()
	a, _, err := InitAuthDir(dir, DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		out := map[string]string{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			info, _ := e.Info()
			out[e.Name()] = string(b) + info.ModTime().String() + info.Mode().String()
		}
		return out
	}
	before := snapshot()
	r, paths, err := ReadAuthDir(dir, DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	after := snapshot()
	if len(before) != len(after) {
		t.Fatalf("reading the folder changed its files: %d, then %d", len(before), len(after))
	}
	for name, was := range before {
		if after[name] != was {
			t.Errorf("reading the folder rewrote %s", name)
		}
	}
	if r.AccountKey() != a.AccountKey() || paths[RoleRequester] != CredsPath(dir, RoleRequester) {
		t.Errorf("read account %s, creds %v: want %s", r.AccountKey(), paths, a.AccountKey())
	}
	if err := os.Remove(CredsPath(dir, RoleWatcher)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadAuthDir(dir, DefaultPrefix); err == nil {
		t.Error("a folder without the watcher's creds file was taken")
	}
}
