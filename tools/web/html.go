package web

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToMarkdown converts an HTML page (already UTF-8) to Markdown: the
// page's main content (its <main>, or its only <article>, else its body)
// without navigation, scripts, forms, inline images' data and hidden
// parts. Relative links are made absolute against pageURL.
func htmlToMarkdown(ctx context.Context, page []byte, pageURL string) (title, md string, err error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return "", "", fmt.Errorf("parse HTML: %w", err)
	}
	title = collapseSpace(tidyText(strings.ToValidUTF8(textOf(findFirst(doc, atom.Title)), "\uFFFD")))
	prune(doc)
	root := mainContent(doc)
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), table.WithSkipEmptyRows(true)),
		strikethrough.NewStrikethroughPlugin(),
	))
	out, err := conv.ConvertNode(root, converter.WithDomain(pageURL), converter.WithContext(ctx))
	if err != nil {
		return title, "", fmt.Errorf("convert HTML to Markdown: %w", err)
	}
	if root != doc && len(bytes.TrimSpace(out)) < 200 {
		// The chosen element is nearly empty (filled in by scripts?):
		// the whole body says more.
		if whole, err := conv.ConvertNode(doc, converter.WithDomain(pageURL), converter.WithContext(ctx)); err == nil {
			out = whole
		}
	}
	return title, tidyMarkdown(string(out)), nil
}

// Elements that are never content. (Not <form>: some sites wrap the
// whole page in one.)
var prunedTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Canvas: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Nav: true, atom.Aside: true, atom.Footer: true, atom.Button: true,
	atom.Select: true, atom.Input: true, atom.Textarea: true, atom.Dialog: true, atom.Link: true,
	atom.Meta: true,
}

// prune removes what is not content: the tags above, hidden elements,
// navigation landmarks, a page-level <header>, and images whose source
// is inline data (base64 that would fill the context).
func prune(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.CommentNode || c.Type == html.ElementNode && dropNode(c) {
			n.RemoveChild(c)
		} else {
			prune(c)
		}
		c = next
	}
}

func dropNode(n *html.Node) bool {
	if prunedTags[n.DataAtom] {
		return true
	}
	if _, hidden := attr(n, "hidden"); hidden {
		return true
	}
	if v, _ := attr(n, "aria-hidden"); v == "true" {
		return true
	}
	if v, _ := attr(n, "style"); strings.Contains(strings.ReplaceAll(strings.ToLower(v), " ", ""), "display:none") {
		return true
	}
	switch v, _ := attr(n, "role"); v {
	case "navigation", "banner", "contentinfo", "complementary", "search", "dialog":
		return true
	}
	switch n.DataAtom {
	case atom.Header:
		return !inside(n, atom.Article, atom.Main, atom.Section)
	case atom.Img:
		src, _ := attr(n, "src")
		return strings.HasPrefix(strings.TrimSpace(strings.ToLower(src)), "data:")
	}
	return false
}

// mainContent picks the subtree to convert: the page's <main>, else its
// only <article>, else the whole document.
func mainContent(doc *html.Node) *html.Node {
	if m := findFirst(doc, atom.Main); m != nil {
		return m
	}
	var articles []*html.Node
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Article && !inside(n, atom.Article) {
			articles = append(articles, n)
		}
	})
	if len(articles) == 1 {
		return articles[0]
	}
	return doc
}

func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func findFirst(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findFirst(c, a); f != nil {
			return f
		}
	}
	return nil
}

func inside(n *html.Node, as ...atom.Atom) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		for _, a := range as {
			if p.Type == html.ElementNode && p.DataAtom == a {
				return true
			}
		}
	}
	return false
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

var blankRuns = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n{3,}`) })

// tidyMarkdown makes the converter's output compact and safe to show:
// valid UTF-8, no control characters but tab and newline, trailing spaces
// trimmed, at most one blank line in a row.
func tidyMarkdown(s string) string {
	s = tidyText(strings.ToValidUTF8(s, "\uFFFD"))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	s = blankRuns().ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}
