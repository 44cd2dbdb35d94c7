package httpguard

import (
	"fmt"
	"net/http"
)

// Limit lets at most n requests into h at once; the one past them is
// answered 503 with a Retry-After, so long-lived requests (event
// streams) cannot pile up without bound.
func Limit(n int, what string, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("too many %s at once (%d): close one and try again", what, n), http.StatusServiceUnavailable)
			return
		}
		defer func() { <-slots }()
		h.ServeHTTP(w, r)
	})
}
