// Package procsec hardens the troupe processes themselves.
package procsec
