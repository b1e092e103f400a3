from memlab.cli.main import console

console()
