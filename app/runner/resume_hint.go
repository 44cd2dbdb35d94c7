package runner

import (
	"net/url"
	"sort"
	"strings"

	"github.com/troupe-ai/troupe/cluster"
)

// ResumeCommand is the command line that goes on with the run: its
// workspace, the config file when one was given (configFile, as the user
// named it), the server when it was not the embedded one (with the
// .creds file the run used for it), and each kind
// placed other than locally. A password or token in the server's URL is
// masked: no secret is printed.
func (r *Run) ResumeCommand(workspace, configFile string) string {
	natsURL, creds := "", ""
	if r.bus != nil && r.bus.emb == nil {
		natsURL, creds = r.bus.url, r.bus.credsFile
	}
	return resumeCommand(r.ID(), workspace, configFile, natsURL, creds, r.placement)
}

// resumeCommand builds ResumeCommand's line from its parts.
func resumeCommand(run, workspace, configFile, natsURL, creds string, placement map[string]string) string {
	args := []string{"orchestrator", "resume", shellWord(run), "--workspace", shellWord(workspace)}
	if configFile != "" {
		args = append(args, "--config", shellWord(configFile))
	}
	if natsURL != "" {
		args = append(args, "--nats", shellWord(maskPasswords(natsURL)))
	}
	if creds != "" {
		args = append(args, "--creds", shellWord(creds))
	}
	var placed []string
	for kind, where := range placement {
		if where != cluster.PlaceLocal {
			placed = append(placed, kind+"="+where)
		}
	}
	if len(placed) > 0 {
		sort.Strings(placed)
		args = append(args, "--placement", shellWord(strings.Join(placed, ",")))
	}
	return strings.Join(args, " ")
}

// maskPasswords masks the password (or the token) of each URL of a
// comma-separated list.
func maskPasswords(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		if _, hasPassword := u.User.Password(); !hasPassword {
			u.User = url.User("xxxxx") // a user name alone is NATS's token
		}
		parts[i] = u.Redacted()
	}
	return strings.Join(parts, ",")
}

// shellWord is s as one word for a POSIX shell: unchanged when it holds
// only characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
