/** Whether a process of this machine runs, by its id (EPERM: it does, as another user's): staging files and config locks left behind. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
