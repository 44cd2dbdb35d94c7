// Package readme holds the tests that keep README.md true: its code
// samples are built and run as a user would run them.
package readme
