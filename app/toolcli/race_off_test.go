//go:build !race

package toolcli

// raceBuild: see race_on_test.go.
const raceBuild = false
