"""
Do not modify this file.
This file configures pytest and imports fixtures to simplify the development of task.py
"""

from kernelfoundry.conftest import *
