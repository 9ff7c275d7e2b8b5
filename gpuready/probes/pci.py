"""PCI display devices and DRM cards from Linux sysfs, shared by the NVIDIA, AMD and Intel probes.

Sources: ``/sys/bus/pci/devices/*/{vendor,device,class,uevent}`` and
``/sys/class/drm/card*/device/{vendor,device,uevent}``. Pure parsing lives in
:func:`parse_uevent` and :func:`parse_hex`; the rest only gathers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuready.hardware import Problem
from gpuready.host import Host

VENDOR_IDS = {"nvidia": "10de", "amd": "1002", "intel": "8086"}
_CARD = re.compile(r"^card(\d+)$")


@dataclass(frozen=True)
class PCIDevice:
    address: str  # 0000:01:00.0, or the DRM card name when sysfs hides the address
    vendor_id: str  # four hex digits, lower case
    device_id: str
    class_code: str | None  # six hex digits, e.g. 030000 (VGA) or 030200 (3D controller)
    driver: str | None  # from uevent DRIVER=, None when no driver is bound
    sysfs: str  # the device's sysfs directory

    @property
    def pci_id(self) -> str:
        return f"{self.vendor_id}:{self.device_id}"


def parse_hex(text: str | None, digits: int = 4) -> str | None:
    """'0x10de\\n' -> '10de'; None for anything that is not a hex number."""
    if text is None:
        return None
    value = text.strip().lower()
    value = value[2:] if value.startswith("0x") else value
    if not value or not re.fullmatch(r"[0-9a-f]+", value):
        return None
    return value.zfill(digits)[-digits:]


def parse_uevent(text: str | None) -> dict[str, str]:
    """``KEY=value`` lines of a sysfs uevent file."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def sysfs_hex(text: str | None, digits: int = 4) -> str | None:
    """A sysfs id file ('0x10de\n'): exactly ``digits`` hex digits after 0x, else None (a truncated '0x1' is not vendor 0001)."""
    value = parse_hex(text, digits)
    return value if value is not None and len(text.strip().lower().removeprefix("0x")) == digits else None


def _device(host: Host, directory: str, address: str) -> PCIDevice | None:
    vendor = sysfs_hex(host.read_text(f"{directory}/vendor"))
    device = sysfs_hex(host.read_text(f"{directory}/device"))
    if vendor is None or device is None:
        return None
    uevent = parse_uevent(host.read_text(f"{directory}/uevent"))
    class_code = sysfs_hex(host.read_text(f"{directory}/class"), 6) or parse_hex(uevent.get("PCI_CLASS"), 6)
    return PCIDevice(
        address=uevent.get("PCI_SLOT_NAME", address),
        vendor_id=vendor,
        device_id=device,
        class_code=class_code,
        driver=uevent.get("DRIVER") or None,
        sysfs=directory,
    )


def display_devices(host: Host, vendor: str) -> list[PCIDevice]:
    """PCI display controllers (class 03xxxx) of one vendor, in bus order."""
    wanted = VENDOR_IDS[vendor]
    found = []
    for address in host.list_dir("/sys/bus/pci/devices") or []:
        directory = f"/sys/bus/pci/devices/{address}"
        if sysfs_hex(host.read_text(f"{directory}/vendor")) != wanted:
            continue
        device = _device(host, directory, address)
        if device and (device.class_code or "").startswith("03"):
            found.append(device)
    return found


def drm_cards(host: Host, vendor: str) -> list[tuple[str, PCIDevice]]:
    """``(cardN, device)`` for each DRM card of one vendor, in card order (connectors like card0-DP-1 skipped)."""
    wanted = VENDOR_IDS[vendor]
    cards = []
    for name in host.list_dir("/sys/class/drm") or []:
        match = _CARD.match(name)
        if not match:
            continue
        directory = f"/sys/class/drm/{name}/device"
        device = _device(host, directory, name)
        if device and device.vendor_id == wanted:
            cards.append((int(match.group(1)), name, device))
    return [(name, device) for _, name, device in sorted(cards)]


def read_int(host: Host, path: str) -> int | None:
    """A sysfs file holding one decimal integer, or None."""
    text = host.read_text(path)
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if 0 <= value <= 1 << 60 else None  # a sysfs size beyond an exabyte is garbage


# Vendors whose PCI devices gpuready reports (GPUs and NPUs: NVIDIA, AMD, Intel, Qualcomm).
ACCELERATOR_VENDORS = {"10de", "1002", "1022", "8086", "17cb"}
# PCI classes of GPUs and NPUs: display (03), processing accelerator (12), signal processing (1180, AMD XDNA).
_ACCELERATOR_CLASSES = ("03", "12", "1180")


def _garbled(text: str | None, uevent: bool = False, digits: int = 4) -> bool:
    """A file that is there but does not read as what sysfs puts in it."""
    if text is None:
        return False
    if uevent:
        lines = [line for line in text.splitlines() if line.strip()]
        return not lines or any("=" not in line for line in lines)
    return sysfs_hex(text, digits) is None


def unreadable_devices(host: Host) -> list[Problem]:
    """A warning naming each garbled sysfs file of a device that may be a GPU or NPU, which the vendor probes then cannot see."""
    problems: list[Problem] = []
    seen: set[str] = set()
    directories = [(f"/sys/bus/pci/devices/{a}", a) for a in host.list_dir("/sys/bus/pci/devices") or []]
    directories += [(f"/sys/class/{kind}/{name}/device", name) for kind in ("drm", "accel")
                    for name in host.list_dir(f"/sys/class/{kind}") or [] if _CARD.match(name) or name.startswith("accel")]
    for directory, address in directories:
        texts = {name: host.read_text(f"{directory}/{name}") for name in ("vendor", "device", "class", "uevent")}
        uevent = parse_uevent(texts["uevent"])
        address = uevent.get("PCI_SLOT_NAME", address)
        bad = [name for name in ("vendor", "device", "class") if _garbled(texts[name], digits=6 if name == "class" else 4)] + (["uevent"] if _garbled(texts["uevent"], True) else [])
        if not bad or address in seen:
            continue
        vendor = sysfs_hex(texts["vendor"])
        class_code = sysfs_hex(texts["class"], 6) or parse_hex(uevent.get("PCI_CLASS"), 6)
        if (vendor and vendor not in ACCELERATOR_VENDORS) or (class_code and not class_code.startswith(_ACCELERATOR_CLASSES)):
            continue  # readable enough to tell it is not a GPU or NPU
        seen.add(address)
        files = ", ".join(f"{directory}/{name}" for name in bad)
        problems.append(Problem("pci", f"{files}: unreadable (garbled); the device at {address} may be a GPU or NPU missing from this report",
                                "Compare with `lspci -nn`; a sysfs file that reads garbage points at a kernel, driver or virtualisation fault.",
                                "warning"))
    return problems
