package runner

import (
	"os"
	"path/filepath"

	"github.com/troupe-ai/troupe/bus"
)

// ResumeLine is the command line that resumes run, in workspace, through
// the server at natsURL (its password masked) with the requester's
// credentials beside creds (the watcher.creds a watch connected with sits
// beside serve's requester.creds), or creds itself when none is there;
// placement names the kinds to place other than locally.
func ResumeLine(run, workspace, natsURL, creds string, placement map[string]string) string {
	if creds != "" {
		if r := filepath.Join(filepath.Dir(creds), string(bus.RoleRequester)+".creds"); r != creds {
			if _, err := os.Stat(r); err == nil {
				creds = r
			}
		}
	}
	return resumeCommand(run, workspace, "", natsURL, creds, placement)
}

// ResumeLines is ResumeLine for the runs seen through one server (natsURL,
// creds), in the shape console.Watcher's Resume takes.
func ResumeLines(natsURL, creds string) func(run, workspace string, placement map[string]string) string {
	return func(run, workspace string, placement map[string]string) string {
		return ResumeLine(run, workspace, natsURL, creds, placement)
	}
}
