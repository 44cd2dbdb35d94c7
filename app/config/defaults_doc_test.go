package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/configs"
)

// Every setting in configs/default.yaml is documented where it stands: a
// comment on its line, or on the line above; sections may be documented
// by their settings.
func TestDefaultsDocumented(t *testing.T) {
	key := regexp.MustCompile(`^(\s*)([a-z_]+):(.*)$`)
	lines := strings.Split(string(configs.Default), "\n")
	for i, l := range lines {
		m := key.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		section := strings.TrimSpace(m[3]) == "" // a mapping opened below
		above := i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#")
		if section && m[1] == "" {
			continue // a top-level section: its settings carry the words
		}
		if !strings.Contains(l, "#") && !above && !section {
			t.Errorf("configs/default.yaml line %d: %q has no comment", i+1, strings.TrimSpace(l))
		}
	}
}
