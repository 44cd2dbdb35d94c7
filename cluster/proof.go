package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// A task's result is accepted only from the node that pulled the task:
// the run gives each task a random secret (messages.Task.Secret), which
// only the nodes that receive the task from the queue see, and the
// result carries an HMAC-SHA256 of its exact bytes under that secret.
// Anyone else who can publish results (any holder of node credentials)
// cannot make one the parent accepts.

// proofHeader carries a result's proof.
const proofHeader = "Troupe-Proof"

// newSecret is a fresh task secret (256 random bits, base64url).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// prove is the proof of data under secret.
func prove(secret string, data []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(data)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// proven says proof is data's proof under secret.
func proven(secret string, data []byte, proof string) bool {
	want := prove(secret, data)
	return hmac.Equal([]byte(want), []byte(proof))
}
