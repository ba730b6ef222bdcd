package lessons

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	yamlast "github.com/goccy/go-yaml/ast"

	"github.com/rdmalab/rdmalab/internal/i18n"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// A peer (ProgramConfig.Peer, peers/write-target.c) prints its report in
// English: check.sh reads it as printed (LAB_PEER_OUT), and the learner
// reads it in the page's language. Its Chinese lives beside it, in
// peers/write-target.zh.yaml, written by the lesson's author with the
// peer: a list of the lines it can print, each a regular expression over
// one whole line and its Chinese, tried in order:
//
//	- re: 'connected: yes'
//	  zh: 已连接：是
//	  example: 'connected: yes'
//	- re: 'received: (.+)'
//	  zh: 收到：“$1”
//	  example: 'received: hello, peer'
//
// The first entry whose re matches a line replaces it with zh, where $1 …
// are re's groups; a line no entry matches is shown as printed. Each entry
// carries an example, a line the peer prints, which check proves matches
// and comes out in Chinese with Chinese punctuation (internal/zhcheck):
// what a group carries over is the peer's own text, so text the peer
// quotes from the system (a work completion's status) goes in “” there.

// Bounds of a peer's Chinese.
const (
	MaxPeerReportFile  = 16 << 10 // bytes of peers/NAME.zh.yaml
	MaxPeerReportLines = 64       // entries in it
)

// peerLine is one entry of a peer's Chinese.
type peerLine struct {
	re *regexp.Regexp // anchored: the whole line
	zh string
}

// peerLineYAML is an entry as written.
type peerLineYAML struct {
	Re      string `yaml:"re"`
	Zh      string `yaml:"zh"`
	Example string `yaml:"example"`
}

// PeerReportFile is the file of the Chinese of peer (a .c path of the
// lesson): peers/write-target.c → peers/write-target.zh.yaml.
func PeerReportFile(peer string) string {
	return strings.TrimSuffix(peer, ".c") + ".zh.yaml"
}

// PeerReport is the peer's report in both languages: en as printed, zh
// with every line the peer's Chinese (peers/NAME.zh.yaml) knows in
// Chinese, the others as printed.
func (p *Program) PeerReport(report string) i18n.Text {
	lines := strings.Split(report, "\n")
	for i, l := range lines {
		for _, e := range p.peerZh {
			if e.re.MatchString(l) {
				lines[i] = e.re.ReplaceAllString(l, e.zh)
				break
			}
		}
	}
	return i18n.Text{"en": report, "zh": strings.Join(lines, "\n")}
}

// peerZhResult is a peer's Chinese read once per load: several programs
// may share one peer.
type peerZhResult struct {
	lines   []peerLine
	missing string // why there is none, for the :::program line
}

// peerReport reads the Chinese of lesson slug's peer. A file that is not
// there (or not readable) is what missing says, for the :::program line;
// what is wrong inside it is reported at its own file and line.
func (ld *loader) peerReport(slug, peer string) (lines []peerLine, missing string) {
	name := PeerReportFile(peer)
	key := slug + "/" + name
	if r, done := ld.peerZh[key]; done {
		return r.lines, r.missing
	}
	lines, missing = ld.readPeerReport(slug, name)
	if ld.peerZh == nil {
		ld.peerZh = map[string]peerZhResult{}
	}
	ld.peerZh[key] = peerZhResult{lines, missing}
	return lines, missing
}

func (ld *loader) readPeerReport(slug, name string) ([]peerLine, string) {
	file := slug + "/" + name
	data, m := readLessonFile(ld.fsys, slug, name, "Chinese of the peer's report", MaxPeerReportFile)
	if m != "" {
		if strings.HasPrefix(m, "no ") {
			m = fmt.Sprintf("the peer's report needs its Chinese: no %s (the lines it prints, each re, zh and example: docs/authoring.md)", file)
		}
		return nil, m
	}
	f, err := parseYAML(data)
	if err != nil {
		line, msg := 1, err.Error()
		var syn *yaml.SyntaxError
		if errors.As(err, &syn) && syn.Token != nil && syn.Token.Position != nil {
			line, msg = syn.Token.Position.Line, syn.Message
		}
		ld.errAt(file, line, "YAML: %s", strings.ReplaceAll(msg, "\n", " "))
		return nil, ""
	}
	var seq *yamlast.SequenceNode
	if len(f.Docs) == 1 && f.Docs[0] != nil {
		seq, _ = unwrap(f.Docs[0].Body).(*yamlast.SequenceNode)
	}
	if seq == nil || len(seq.Values) == 0 {
		ld.errAt(file, 1, "must be a list of the lines the peer prints, each {re, zh, example}")
		return nil, ""
	}
	if len(seq.Values) > MaxPeerReportLines {
		ld.errAt(file, 1, "%d entries, at most %d", len(seq.Values), MaxPeerReportLines)
		return nil, ""
	}
	var out []peerLine
	for i, n := range seq.Values {
		line := 1
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		bad := func(format string, args ...any) {
			ld.errAt(file, line, "entry %d: "+format, append([]any{i + 1}, args...)...)
		}
		var e peerLineYAML
		if err := yaml.NodeToValue(n, &e, yaml.DisallowUnknownField()); err != nil {
			bad("%s", strings.ReplaceAll(yaml.FormatError(err, false, false), "\n", " "))
			continue
		}
		if e.Re == "" || e.Zh == "" || e.Example == "" {
			bad("needs re (a regular expression over one line the peer prints), zh (its Chinese) and example (such a line)")
			continue
		}
		re, err := regexp.Compile(`^(?:` + e.Re + `)$`)
		if err != nil {
			bad("re %q: %v", e.Re, err)
			continue
		}
		if !hanRE.MatchString(e.Zh) {
			bad("zh %q is not Chinese", e.Zh)
		}
		if !re.MatchString(e.Example) {
			bad("re %q does not match the whole of its example %q", e.Re, e.Example)
			continue
		}
		zh := re.ReplaceAllString(e.Example, e.Zh)
		if prose := zhcheck.Prose(zh); len(prose) > 0 {
			bad("the example comes out as %q: English %q (put what the peer quotes from the system in “”)", zh, prose)
		}
		if leaks := zhcheck.Leaks(zh); len(leaks) > 0 {
			bad("the example comes out as %q: %s (Chinese writes ，。：；（）“”)", zh, strings.Join(leaks, "; "))
		}
		out = append(out, peerLine{re: re, zh: e.Zh})
	}
	return out, ""
}

// hanRE finds a Chinese character.
var hanRE = regexp.MustCompile(`\p{Han}`)
