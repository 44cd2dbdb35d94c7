package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/text"
)

// resultText renders a tool call's result for the model: text kept,
// embedded text resources kept under their URI, images, audio, blobs and
// resource links summarised in one line each, structured content as JSON
// when there is nothing else. Every piece is cleaned of control characters
// and invalid UTF-8; the executor's truncation caps the whole.
func resultText(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if p := contentText(c); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, cleanText(string(b)))
		}
	}
	return strings.Join(parts, "\n")
}

func contentText(c sdk.Content) string {
	switch v := c.(type) {
	case *sdk.TextContent:
		return cleanText(v.Text)
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %s; not shown]", mimeOr(v.MIMEType), size(len(v.Data)))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %s; not shown]", mimeOr(v.MIMEType), size(len(v.Data)))
	case *sdk.ResourceLink:
		line := "[resource link: " + oneLine(v.URI, 300)
		if v.Name != "" {
			line += " (" + oneLine(v.Name, 100) + ")"
		}
		if v.MIMEType != "" {
			line += ", " + oneLine(v.MIMEType, 80)
		}
		if v.Description != "" {
			line += ": " + oneLine(v.Description, 200)
		}
		return line + "]"
	case *sdk.EmbeddedResource:
		res := v.Resource
		if res == nil {
			return "[empty embedded resource]"
		}
		if res.Text != "" || len(res.Blob) == 0 {
			return fmt.Sprintf("[resource %s]\n%s", oneLine(res.URI, 300), cleanText(res.Text))
		}
		return fmt.Sprintf("[resource %s: %s, %s of binary data; not shown]", oneLine(res.URI, 300), mimeOr(res.MIMEType), size(len(res.Blob)))
	case nil:
		return ""
	}
	return fmt.Sprintf("[%T content; not shown]", c)
}

func mimeOr(m string) string {
	if m == "" {
		return "unknown type"
	}
	return oneLine(m, 80)
}

func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

// oneLine cleans s, folds it onto one line and caps it at n bytes.
func oneLine(s string, n int) string {
	return text.Clip(strings.Join(strings.Fields(cleanText(s)), " "), n)
}

// cleanText makes text from a server safe to show: invalid UTF-8 becomes
// U+FFFD, terminal escape sequences and control characters other than
// newline and tab are removed, CRLF becomes LF.
func cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b: // ESC: drop the whole sequence (CSI, OSC, or a single character)
			n = escapeLen(s[i:])
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				break
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r), r == '\u2028', r == '\u2029', unicode.Is(unicode.Bidi_Control, r):
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters, then a final byte in 0x40-0x7e
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']': // OSC: up to BEL or ESC \
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}
