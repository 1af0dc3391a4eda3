// copyFolder: the first start's copies of the install's clusters, many files in flight.
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { copyFolder } from "../../scripts/embedded/copy-folder.js";

const root = await mkdtemp(path.join(tmpdir(), "copy-folder-"));
afterAll(() => rm(root, { recursive: true, force: true }));

it("copies every file of every folder, keeping each file's mode; folders get the mode asked for", async () => {
  const from = path.join(root, "from");
  await mkdir(path.join(from, "base", "5"), { recursive: true });
  await mkdir(path.join(from, "empty"));
  for (let i = 0; i < 40; i++) await writeFile(path.join(from, "base", "5", `${i}`), `page ${i}`);
  await writeFile(path.join(from, "PG_VERSION"), "17\n", { mode: 0o600 });
  await chmod(path.join(from, "PG_VERSION"), 0o600);
  await writeFile(path.join(from, "postgresql.conf"), "x", { mode: 0o640 });
  await chmod(path.join(from, "postgresql.conf"), 0o640);

  const to = path.join(root, "to");
  await copyFolder(from, to, 0o700);
  for (let i = 0; i < 40; i++) expect(await readFile(path.join(to, "base", "5", `${i}`), "utf8")).toBe(`page ${i}`);
  expect(await readFile(path.join(to, "PG_VERSION"), "utf8")).toBe("17\n");
  expect((await stat(path.join(to, "PG_VERSION"))).mode & 0o777).toBe(0o600);
  expect((await stat(path.join(to, "postgresql.conf"))).mode & 0o777).toBe(0o640);
  for (const dir of ["", "base", "base/5", "empty"]) expect((await stat(path.join(to, dir))).mode & 0o777).toBe(0o700);
});

it("refuses a destination that exists, leaving it as it was", async () => {
  const from = path.join(root, "src2");
  await mkdir(from);
  await writeFile(path.join(from, "a"), "new");
  const to = path.join(root, "taken");
  await mkdir(to);
  await writeFile(path.join(to, "a"), "old");
  await expect(copyFolder(from, to)).rejects.toMatchObject({ code: "EEXIST" });
  expect(await readFile(path.join(to, "a"), "utf8")).toBe("old");
});
