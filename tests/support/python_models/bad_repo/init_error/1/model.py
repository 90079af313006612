"""initialize() raises: the model must fail to load with that message."""


class TritonPythonModel:
    def initialize(self, args):
        raise ValueError("initialize failed on purpose")

    def execute(self, requests):
        return []
