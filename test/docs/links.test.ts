/**
 * The repository's documents stand on their own: every relative link of the README and of every
 * Markdown file under docs/ (the decision records of docs/decisions/ included) names a file of the
 * repository (and, with `#anchor`, one of its headings), and none points outside the repository's
 * own tree.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, expect, it } from "vitest"
import { ROOT } from "../support/paths.js"

/** Every Markdown file under a folder of the repository, its subfolders included (docs/decisions/). */
const markdownUnder = (folder: string): Array<string> =>
  readdirSync(join(ROOT, folder), { withFileTypes: true })
    .flatMap((entry) => entry.isDirectory() ? markdownUnder(`${folder}/${entry.name}`) : entry.name.endsWith(".md") ? [`${folder}/${entry.name}`] : [])
    .sort()

const documents = ["README.md", ...markdownUnder("docs")]

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")

const anchorsOf = (file: string) =>
  new Set(readFileSync(file, "utf8").split("\n").filter((line) => /^#{1,6}\s/.test(line)).map((line) => anchorOf(line.replace(/^#+\s*/, ""))))

describe("the documents' links", () => {
  it("covers the README, the integration guide and the decision records", () => {
    expect(documents).toContain("docs/integration.md")
    expect(documents).toContain("docs/decisions/README.md")
    expect(documents.filter((d) => /^docs\/decisions\/\d{4}-[a-z0-9-]+\.md$/.test(d)).length).toBeGreaterThan(0)
  })

  it.each(documents)("%s: every relative link resolves inside the repository, anchors included", (document) => {
    const text = readFileSync(join(ROOT, document), "utf8").replace(/```[\s\S]*?```/g, "")
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:/i.test(target))
    expect(text).not.toMatch(/\.\.\/shared|CONTRACT\.md|merchant-api\.md/)
    for (const link of links) {
      const [path = "", anchor] = link.split("#")
      const target = path === "" ? join(ROOT, document) : join(dirname(join(ROOT, document)), path)
      expect(relative(ROOT, target).startsWith(".."), `${link} leaves the repository`).toBe(false)
      expect(existsSync(target), `${document}: ${link}`).toBe(true)
      if (anchor !== undefined) expect([...anchorsOf(target)], `${document}: ${link}`).toContain(anchor)
    }
  })
})
