package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/lessons"
)

const newUsage = `usage: labserver new lesson SLUG [--dir DIR]

Creates DIR/SLUG (DIR defaults to $LAB_LESSONS, else the current folder)
with index.zh.md, index.en.md, quiz.yaml and images/diagram.svg: an example
of every directive and every question type that passes "labserver check".
SLUG is NN-words (e.g. 02-queue-pairs); without the NN- prefix the next
free number is used.
`

// slugWords is a lesson slug without its number: lower-case words and dashes.
var slugWords = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// numberedSlug is a complete lesson folder name.
var numberedSlug = regexp.MustCompile(`^([0-9]{2,})-([a-z0-9]+(-[a-z0-9]+)*)$`)

// runNew is `labserver new lesson SLUG [--dir DIR]`.
func runNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "lesson" {
		fmt.Fprint(stderr, newUsage)
		return 2
	}
	fset := flag.NewFlagSet("labserver new lesson", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, newUsage) }
	dir := fset.String("dir", os.Getenv("LAB_LESSONS"), "course folder")
	// Accept the slug before or after the flags.
	rest := args[1:]
	var slug string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		slug, rest = rest[0], rest[1:]
	}
	if err := fset.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if slug == "" && fset.NArg() == 1 {
		slug = fset.Arg(0)
	} else if fset.NArg() > 0 || slug == "" {
		fmt.Fprint(stderr, newUsage)
		return 2
	}
	if *dir == "" {
		*dir = "."
	}
	folder, err := newLesson(*dir, slug)
	if err != nil {
		fmt.Fprintln(stderr, "labserver new:", err)
		return 1
	}
	fmt.Fprintf(stdout, "created %s\n", folder)
	// The scaffold must pass check; show what check says about the course.
	diags := lessons.Check(os.DirFS(*dir), lessonOptions())
	errs := 0
	for _, d := range diags {
		if d.Severity == lessons.Error {
			errs++
		}
		fmt.Fprintln(stdout, filepath.Join(*dir, d.File)+strings.TrimPrefix(d.String(), d.File))
	}
	if errs > 0 {
		fmt.Fprintf(stderr, "labserver new: the course in %s has %d error(s); see above\n", *dir, errs)
		return 1
	}
	fmt.Fprintf(stdout, "next: edit the files, then run `labserver check %s` or `labserver serve --lessons %s` (pages reload as you save)\n", *dir, *dir)
	return 0
}

// newLesson writes the scaffold for slug into dir and returns its folder.
func newLesson(dir, slug string) (string, error) {
	order, words, err := lessonNumber(dir, slug)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%02d-%s", order, words)
	folder := filepath.Join(dir, name)
	if _, err := os.Stat(folder); err == nil {
		return "", fmt.Errorf("%s already exists; pick another slug", folder)
	}
	if err := os.MkdirAll(filepath.Join(folder, "images"), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", folder, err)
	}
	files := map[string]string{
		"index.zh.md":        scaffoldPage(scaffoldZh, order, words),
		"index.en.md":        scaffoldPage(scaffoldEn, order, words),
		"quiz.yaml":          strings.ReplaceAll(scaffoldQuiz, "LESSON", words),
		"images/diagram.svg": scaffoldSVG,
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(folder, file), []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", file, err)
		}
	}
	return folder, nil
}

// lessonNumber splits a slug into its number and words. A slug without a
// number gets the next one after the highest lesson folder in dir.
func lessonNumber(dir, slug string) (int, string, error) {
	if m := numberedSlug.FindStringSubmatch(slug); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return 0, "", fmt.Errorf("slug %q: bad number: %w", slug, err)
		}
		return n, m[2], nil
	}
	if !slugWords.MatchString(slug) {
		return 0, "", fmt.Errorf("slug %q: use lower-case words and dashes, optionally numbered (02-queue-pairs)", slug)
	}
	high := 0
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, "", fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		if m := numberedSlug.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			if n, _ := strconv.Atoi(m[1]); n > high {
				high = n
			}
		}
	}
	return high + 1, slug, nil
}

// scaffoldPage fills a page template: ORDER, LESSON (the slug's words, used
// in question ids), TITLE (the words with spaces).
func scaffoldPage(tmpl string, order int, words string) string {
	return strings.NewReplacer(
		"ORDER", strconv.Itoa(order),
		"LESSON", words,
		"TITLE", strings.ReplaceAll(words, "-", " "),
	).Replace(tmpl)
}

// The scaffold. Every directive and question type appears once; the prose
// says what to replace. Experiment params are the memlock experiment's
// (see docs/authoring.md for every experiment and its params).

const scaffoldEn = `---
title: "TITLE"
summary: One sentence that says what the learner gets out of this lesson.
order: ORDER
duration: 30
objectives:
  - Name the thing this lesson teaches
  - Run the experiment and explain its result
prerequisites: []
references:
  - title: "Systems Performance, 2nd ed. (Brendan Gregg)"
    url: https://www.brendangregg.com/systems-performance-2nd-edition-book.html
checkpoint: new   # new: ask only what the text did not; all: ask every question again
reveal_after: 3   # wrong attempts before a question shows its answer (0: never by count)
---

Replace this text with the introduction. Everything here is Markdown:
**bold**, ` + "`code`" + `, [links](https://example.org), tables and lists.

## A section with a table

| path | what it costs |
|---|---|
| kernel TCP | copies, stack work, context switches |
| RDMA | the NIC does the work |

An image from this lesson's folder:

![A placeholder diagram](images/diagram.svg)

## Callouts

:::note
A note: background the reader may skip.
:::

:::warning Careful
A warning, here with its own label after the name.
:::

## An experiment

A widget with preset params; learners press *Run* and watch it live.

::experiment memlock limit=65536 size=1MiB ipc_lock=drop

## A diagram

::diagram tcp-vs-rdma

## A question in the text

::quiz LESSON/pick-one

:::takeaway
- The one idea to keep from this lesson.
- And a second one.
:::

## Checkpoint

Every question of quiz.yaml that is not placed above appears here
(write checkpoint: all in the front matter to ask them all again).

::checkpoint
`

const scaffoldZh = `---
title: "TITLE"
summary: 用一句话说明学完这节课能得到什么。
order: ORDER
duration: 30
objectives:
  - 说出这节课讲的概念
  - 运行实验并解释结果
prerequisites: []
references:
  - title: "Systems Performance, 2nd ed. (Brendan Gregg)"
    url: https://www.brendangregg.com/systems-performance-2nd-edition-book.html
checkpoint: new   # new: ask only what the text did not; all: ask every question again
reveal_after: 3   # wrong attempts before a question shows its answer (0: never by count)
---

把这段文字换成引言。这里写的都是 Markdown：**粗体**、` + "`代码`" + `、[链接](https://example.org)、表格和列表。

## 带表格的一节

| 路径 | 代价 |
|---|---|
| 内核 TCP | 拷贝、协议栈处理、上下文切换 |
| RDMA | 由网卡完成 |

引用本课文件夹里的图片：

![示意图占位](images/diagram.svg)

## 提示框

:::note
说明：读者可以跳过的背景知识。
:::

:::warning 注意
警告，名字后面可以写自己的标题。
:::

## 实验

带预设参数的实验组件；学员点击"运行"即可实时观看。

::experiment memlock limit=65536 size=1MiB ipc_lock=drop

## 图示

::diagram tcp-vs-rdma

## 正文中的题目

::quiz LESSON/pick-one

:::takeaway
- 这节课最该记住的一点。
- 第二点。
:::

## 检查点

quiz.yaml 里没有放在上文的题目都会出现在这里（在 front matter 里写 checkpoint: all 则全部再问一遍）。

::checkpoint
`

const scaffoldQuiz = `# Checkpoint questions. Types: single, multi, numeric, order.
# Every text has zh and en; feedback and hint are optional.
questions:
  - id: LESSON/pick-one
    type: single
    prompt:
      zh: 单选题：哪一项正确？
      en: "Single choice: which one is right?"
    options:
      - id: right
        correct: true
        text: {zh: 正确的选项, en: The right option}
        feedback: {zh: 对，因为……, en: "Yes, because…"}
      - id: wrong
        text: {zh: 看似合理的干扰项, en: A plausible distractor}
        feedback: {zh: 不对，因为……, en: "No, because…"}
    explanation:
      zh: 解释为什么正确答案是对的。
      en: Explain why the right answer is right.
    hint: {zh: 提示（可选）。, en: A hint (optional).}

  - id: LESSON/pick-several
    type: multi
    prompt:
      zh: 多选题：选出所有正确项。
      en: "Multiple choice: pick every right answer."
    options:
      - id: a
        correct: true
        text: {zh: 正确一, en: Right one}
      - id: b
        correct: true
        text: {zh: 正确二, en: Right two}
      - id: c
        text: {zh: 错误项, en: A wrong one}
        feedback: {zh: 这一项不对。, en: This one is wrong.}
    explanation:
      zh: 全部选对才算对；每个选项都会给出反馈。
      en: All-or-nothing; every chosen or missed option gets its feedback.

  - id: LESSON/a-number
    type: numeric
    prompt:
      zh: 数值题：100 Gbps 等于多少 GB/s？
      en: "Numeric: how many GB/s is 100 Gbps?"
    value: 12.5
    tolerance: 0.1
    unit: GB/s
    explanation:
      zh: 除以 8：100 / 8 = 12.5。
      en: "Divide by 8: 100 / 8 = 12.5."

  - id: LESSON/in-order
    type: order
    prompt:
      zh: 排序题：按正确顺序排列。
      en: "Order: arrange the steps."
    options:
      - id: first
        text: {zh: 第一步, en: The first step}
      - id: second
        text: {zh: 第二步, en: The second step}
      - id: third
        text: {zh: 第三步, en: The third step}
    explanation:
      zh: 选项按正确顺序书写；学员看到的是打乱后的顺序。
      en: Write the steps in the right order; learners see them shuffled.
`

const scaffoldSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 320 120" role="img" aria-label="placeholder">
  <rect x="10" y="30" width="120" height="60" rx="8" fill="none" stroke="currentColor"/>
  <rect x="190" y="30" width="120" height="60" rx="8" fill="none" stroke="currentColor"/>
  <path d="M130 60 H190" stroke="currentColor" marker-end="url(#a)"/>
  <defs><marker id="a" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0 0 L10 5 L0 10 z" fill="currentColor"/></marker></defs>
  <text x="70" y="65" text-anchor="middle" font-size="14">app</text>
  <text x="250" y="65" text-anchor="middle" font-size="14">NIC</text>
</svg>
`
