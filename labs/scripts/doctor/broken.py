"""A script that cannot run: it fails before any communication (the doctor exits 2)."""
import torch.distributed as dist

dist.init_process_group("gloo")
settings = {"steps": 3}
print(settings["step"])          # a typo: KeyError
