package procguard

import (
	"errors"
	"os/exec"
)

// FindShell returns bash, or sh when bash is not installed.
func FindShell() (string, error) {
	if p, err := exec.LookPath("bash"); err == nil {
		return p, nil
	}
	p, err := exec.LookPath("sh")
	if err != nil {
		return "", errors.New("neither bash nor sh was found in PATH")
	}
	return p, nil
}
