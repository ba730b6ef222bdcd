package lessons

// Aliases: a lesson's front matter may list old slugs (`aliases:
// [02-old-name]`) after its folder was renamed; the server redirects them
// (301) to the lesson and moves learners' progress on them to it.

// AliasTarget is the slug of the lesson that lists slug as an alias ("" if none).
func (c *Course) AliasTarget(slug string) string {
	for _, l := range c.Lessons {
		for _, p := range l.Pages {
			for _, a := range p.Aliases {
				if a == slug {
					return l.Slug
				}
			}
		}
	}
	return ""
}

// Aliases maps every alias of the course to its lesson's slug.
func (c *Course) Aliases() map[string]string {
	out := map[string]string{}
	for _, l := range c.Lessons {
		for _, p := range l.Pages {
			for _, a := range p.Aliases {
				out[a] = l.Slug
			}
		}
	}
	return out
}

// aliasCheck refuses an alias that is the slug of a lesson (it would never
// redirect) or that two lessons claim.
func (ld *loader) aliasCheck(srcs []*lessonSource) {
	slugs := map[string]bool{}
	for _, s := range srcs {
		slugs[s.lesson.Slug] = true
	}
	owner := map[string]string{}
	for _, s := range srcs {
		for _, lang := range Langs {
			file, ok := s.files[lang]
			if !ok {
				continue
			}
			for _, a := range ld.prereqs[file].Aliases {
				switch {
				case slugs[a]:
					ld.errAt(file, 1, "aliases: %q is the folder of a lesson; list only old slugs that no folder uses now", a)
				case owner[a] != "" && owner[a] != s.lesson.Slug:
					ld.errAt(file, 1, "aliases: %q is an alias of %s too; an old slug can lead to one lesson only", a, owner[a])
				default:
					owner[a] = s.lesson.Slug
				}
			}
		}
	}
}
