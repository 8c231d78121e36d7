/** The digest that tells E2 whether a role's or playbook's files changed, on a real disk. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MAX_FILES, roleDigest, RoleDigestError } from '../../../../src/engines/ansible/role-digest.js';

const work = await mkdtemp(join(tmpdir(), 'chartpilot-role-digest-test-'));
after(async () => {
  await rm(work, { recursive: true, force: true });
});

async function files(root: string, tree: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(tree)) {
    await mkdir(join(root, rel, '..'), { recursive: true });
    await writeFile(join(root, rel), content);
  }
}

describe('roleDigest', () => {
  it('changes when any file of the role changes, is stable otherwise, and ignores hidden entries', async () => {
    const role = join(work, 'r1/roles/web');
    await files(role, { 'tasks/main.yml': '- debug: {msg: a}\n', 'defaults/main.yml': 'x: 1\n', 'templates/cm.j2': 'v' });
    const d1 = await roleDigest({ role });
    assert.match(d1, /^[0-9a-f]{64}$/);
    assert.equal(await roleDigest({ role }), d1);
    await files(role, { '.git/HEAD': 'ref', 'tasks/.main.yml.swp': 'junk' });
    assert.equal(await roleDigest({ role }), d1, 'hidden entries do not count');
    await files(role, { 'templates/cm.j2': 'w' });
    const d2 = await roleDigest({ role });
    assert.notEqual(d2, d1);
    await files(role, { 'vars/main.yml': 'y: 2\n' });
    assert.notEqual(await roleDigest({ role }), d2, 'a new file counts');
  });

  it('follows links inside the role, not out of it', async () => {
    const root = join(work, 'r2');
    const role = join(root, 'role');
    await files(root, { 'role/tasks/main.yml': 'a', 'role/files/real.txt': 'in', 'outside.txt': 'secret-ish' });
    await symlink(join(role, 'files/real.txt'), join(role, 'files/alias.txt'));
    await symlink(join(root, 'outside.txt'), join(role, 'files/out.txt'));
    await symlink(role, join(role, 'files/loop'));
    const d1 = await roleDigest({ role });
    await files(root, { 'outside.txt': 'changed' });
    assert.equal(await roleDigest({ role }), d1, 'a file outside the role is not read');
    await files(root, { 'role/files/real.txt': 'in2' });
    assert.notEqual(await roleDigest({ role }), d1);
  });

  it('covers a playbook and the files beside it, and extra role directories', async () => {
    const root = join(work, 'p1');
    await files(root, { 'site.yml': '- hosts: localhost\n', 'roles/db/tasks/main.yml': 'a', 'vars/v.yml': 'x: 1' });
    const playbook = join(root, 'site.yml');
    const d1 = await roleDigest({ playbook });
    await files(root, { 'roles/db/tasks/main.yml': 'b' });
    const d2 = await roleDigest({ playbook });
    assert.notEqual(d2, d1);
    const extra = join(work, 'p1-extra');
    await files(extra, { 'common/tasks/main.yml': 'c' });
    const d3 = await roleDigest({ playbook }, [extra, join(work, 'missing')]);
    assert.notEqual(d3, d2);
    await files(extra, { 'common/tasks/main.yml': 'd' });
    assert.notEqual(await roleDigest({ playbook }, [extra]), d3);
  });

  it('refuses a directory with more files than a role has', async () => {
    const role = join(work, 'big');
    await mkdir(role, { recursive: true });
    // In batches: thousands of files open at once could exceed the descriptor limit.
    for (let i = 0; i <= MAX_FILES; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, MAX_FILES + 1 - i) }, (_, j) => writeFile(join(role, `f${String(i + j)}`), '')));
    }
    await assert.rejects(roleDigest({ role }), (err: unknown) => err instanceof RoleDigestError && /more than 5000 files/.test(err.message));
  });
});
