"""What /proc says about a worker while it runs: the supervisor's signs of progress for a
rank that is outside any torch.distributed call (bytes through its sockets, CPU used, time
spent waiting for a core; 0 where /proc cannot say: then only statuses count), and the
stuck check's (asleep, its main thread's CPU time)."""
import os


def bytes_moved(pid) -> int:
    """Bytes the process has read and written through system calls so far (its sockets:
    gloo's transfers); 0 where /proc cannot say (then only the ranks' status counts)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            fields = dict(line.split(": ") for line in f.read().splitlines())
        return int(fields["rchar"]) + int(fields["wchar"])
    except (OSError, KeyError, ValueError):
        return 0


def cpu_seconds(pid) -> float:
    """CPU seconds the process has used so far (user + system); 0 where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def core_wait_seconds(pid) -> float:
    """Seconds the process's main thread has sat runnable, waiting for a core
    (/proc/<pid>/schedstat); 0 where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def sleeping(pid) -> bool:
    """The process's main thread is asleep (state S: waiting on a lock, a socket, a timer),
    not running or queued for a core; True where /proc cannot say (then ask py-spy)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "S"
    except (OSError, IndexError):
        return True


def main_thread_cpu_seconds(pid) -> float | None:
    """Seconds the process's main thread has run on a core so far (/proc/<pid>/schedstat);
    unchanged between two reads: it did not run in between. None where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        return None
