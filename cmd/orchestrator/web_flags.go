package main

import (
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/internal/webserver"
)

// webGuard is the guard of the web view's address in flag (--http of
// serve, --web of watch) with --http-public and --http-token-file, or nil
// when the flag is not given; a refusal is a usage error.
func webGuard(fs *flagSet, flag string) (*httpguard.Guard, error) {
	addr := fs.values[flag]
	if addr == "" {
		return nil, nil
	}
	g, err := httpguard.New(httpguard.Options{Flag: "--" + flag, Addr: addr, Public: fs.bools["http-public"],
		TokenFile: fs.values["http-token-file"], Exposes: webserver.Exposes})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return g, nil
}
