package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// claimsUpdateSubject is where a server of the operator takes a new JWT
// of account acc (a user of the system account publishes it); a server
// with a memory resolver (troupe's embedded server, auth init's
// server.conf) applies it at once, and closes the connections of the
// users it revokes.
func claimsUpdateSubject(acc string) string { return "$SYS.REQ.ACCOUNT." + acc + ".CLAIMS.UPDATE" }

// systemUser is a user of the system account, minted for one call.
func (a *Auth) systemUser() (string, string, error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return "", "", fmt.Errorf("create user key: %w", err)
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "troupe-auth"
	uc.Expires = time.Now().Add(time.Hour).Unix()
	tok, err := uc.Encode(a.system)
	if err != nil {
		return "", "", fmt.Errorf("sign system user: %w", err)
	}
	seed, _ := user.Seed()
	return tok, string(seed), nil
}

// PushAccount gives the servers at o.URLs (one of a cluster passes it to
// the others) the TROUPE account's JWT as it stands, its revocations
// included: the users it revokes are disconnected at once and refused
// from then on. It connects as a user of the system account minted for
// the call (o's credentials are not used; its TLS settings are).
func (a *Auth) PushAccount(ctx context.Context, o ConnectOptions) error {
	if o.Setting == "" {
		o.Setting = "nats.url"
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	urls := strings.TrimSpace(o.URLs)
	if urls == "" {
		return fmt.Errorf("%s is empty: give the server's URL", o.Setting)
	}
	tok, seed, err := a.systemUser()
	if err != nil {
		return err
	}
	opts := []nats.Option{nats.Name("troupe auth"), nats.UserJWTAndSeed(tok, seed), nats.Timeout(o.Timeout), nats.NoReconnect()}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" && o.TLSKey != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return connectError(o, urls, "a system account user of this auth folder (is the server running with its server.conf?)", err)
	}
	defer nc.Close()
	accPub, _ := a.account.PublicKey()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, claimsUpdateSubject(accPub), []byte(a.accountJWT))
	if err != nil {
		return fmt.Errorf("%s %s: push the account's JWT: %w", o.Setting, redactURL(urls), err)
	}
	var rep struct {
		Data *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"data"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return fmt.Errorf("%s: the server's answer to the account's JWT: %w", o.Setting, err)
	}
	switch {
	case rep.Error != nil:
		return fmt.Errorf("%w: %s", ErrPushRefused, rep.Error.Description)
	case rep.Data == nil || !strings.Contains(rep.Data.Message, "updated"):
		msg := "no answer"
		if rep.Data != nil {
			msg = rep.Data.Message
		}
		return fmt.Errorf("%w: %s", ErrPushRefused, msg)
	}
	return nil
}

// ErrPushRefused is a server that did not take the account's new JWT.
var ErrPushRefused = errors.New("the server did not take the account's JWT")
